set -u
S=8192x32768
L="$S@norm_layernorm_f32_f32_b512x16_n"
for k in l512x8 l512x4 l512x2 l512x2_o2 l512x2_o3 l512x2_o4 l256x4 l256x4_o4 l256x4_o6 l256x2 l256x2_o8 l128x4; do L="$L $S@norm_layernorm_f32_f32_$k"; done
R=4096x36864
for k in s512x8_p l512x4 l512x2_o2 l512x2_o4 l256x4_o4 l256x2_o8; do L="$L $R@norm_layernorm_res_bf16_bf16_$k"; done
SHARED=1 ROUNDS=2 LIST="$L" bash stage/scripts/gpu-norm-ab.sh 2>&1 | tee $OUT/ab.txt
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind
python3 stage/inductor_dump.py 8192 32768 float32 plain 2>&1 | tail -3 | tee $OUT/torch.txt
python3 stage/inductor_dump.py 4096 36864 bfloat16 res 2>&1 | tail -3 | tee -a $OUT/torch.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
$NCU -k regex:triton --launch-skip 0 --launch-count 30 --section LaunchStats --section Occupancy python3 stage/inductor_dump.py 8192 32768 float32 plain > /tmp/ncu.txt 2>&1
grep -E "triton_|Block Size|Grid Size|Registers Per|Dynamic Shared|Static Shared|Theoretical Occ|Achieved Occ" /tmp/ncu.txt | tail -24 > $OUT/ncu.txt
find /tmp/ind -name "*.py" | xargs grep -l "def triton" | head -20 > /tmp/files.txt
tar -czf $OUT/inductor.tgz -T /tmp/files.txt /tmp/ncu.txt 2>/dev/null
cat $OUT/ncu.txt
