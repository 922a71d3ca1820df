# The device call that measured matmul's fragment_double_buffer on one H100 (2026-11-26,
# issue 25) before it was promoted from scripts/ladder/kernels/ (then loaded with
# --kernels-dir scripts/ladder/kernels): verify, params, sanitize, 4096^3 and 1000^3 beside
# cuBLAS, --best at 4096^3. Now it runs the built-in variant. Run from the repository root
# with the PyCUDA kit: run(command="bash scripts/ladder/draft_call.sh", carry=[".device-kit"]);
# the outputs land in $OUT (docs/data/ladder-2026-11-26/ keeps the benchmarks' tables).
. .device-kit/setup.sh && python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
F="--no-vendor --no-batch --warmup 0 --min-samples 3 --max-samples 3 --max-time 0.05"
V="--variant fragment_double_buffer"
python3 -m cudabench matmul $V --size 1000,17x33x5,1x1x1,1x7x1,7x1x9,33x1x65,127x129x131,128x128x128,257x1001x255,200x1000x37,130x37x1000,96x24x260,64x4096x64,3001x1000x2000 $F > $OUT/verify.txt 2>&1; echo verify $?
python3 -m cudabench matmul $V --size 17x33x5,67x45x131,257x1001x255 -p BK=8,16,32 -p GROUP_M=1,16 -p MIN_BLOCKS=1,2 -p SPLIT_MAX=1,8 $F > $OUT/params.txt 2>&1; echo params $?
python3 -m cudabench matmul $V --size 67x45x131,130x37x132 --sanitize memcheck $F > $OUT/san.txt 2>&1; echo memcheck $?
python3 -m cudabench matmul $V --size 67x45x131,130x37x132 --sanitize racecheck $F >> $OUT/san.txt 2>&1; echo racecheck $?
python3 -m cudabench matmul --size 4096 $V --variant prefetch_splitk --variant warptile > $OUT/bench4096.txt 2>&1; echo bench4096 $?
timeout 200 python3 -m cudabench matmul --size 4096 $V -p BK=8,16,32 -p GROUP_M=1,8,16 -p MIN_BLOCKS=1,2 --best --no-vendor > $OUT/best4096.txt 2>&1; echo best $?
python3 -m cudabench matmul --size 1000 $V --variant prefetch_splitk > $OUT/bench1000.txt 2>&1; echo bench1000 $?
cat $OUT/bench4096.txt $OUT/best4096.txt $OUT/bench1000.txt | cut -c1-220 | tail -60
