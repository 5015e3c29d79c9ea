set -u
NORM_TESTS= NORM_SANITIZE= NORM_SHAPES="4x1000003,262144x128" bash stage/scripts/gpu-norm-check.sh
