mkdir -p $OUT/t; OUT=$OUT/t TEST_TIMEOUT=400 GPU_TESTS="gpu_norm:every_layout_variant_on_strided_rows" bash stage/scripts/gpu-run.sh some-tests
