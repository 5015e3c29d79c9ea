set -u
L=""
add() { local shape=$1 base=$2; shift 2; for k in "$@"; do L="$L $shape@${base}_$k"; done; }
add 8192x32768 norm_layernorm_f32_f32 b512x16_n l512x8 l1024x1 l1024x2 l1024x4
add 4096x36864 norm_layernorm_bf16_bf16 l512x4 l1024x1 l1024x2 l1024x4
add 4096x36864 norm_layernorm_res_bf16_bf16 s512x8_p l512x4 l1024x2 l1024x4
add 4096x50256 norm_layernorm_f32_f32 l512x8 l1024x2 l1024x4
add 4096x33000 norm_rmsnorm_bf16_bf16 l512x4 l1024x2 l1024x4
for b in redjit redjit-b redjit-h; do
  SHARED=1 ROUNDS=2 BINS=$b TAG=$b LIST="$L" bash stage/scripts/gpu-norm-ab.sh 2>&1 | grep -v "^NVIDIA\|^name" | tee -a $OUT/ab.txt
  mv $OUT/norm-ab.tgz $OUT/norm-ab-$b.tgz
done
