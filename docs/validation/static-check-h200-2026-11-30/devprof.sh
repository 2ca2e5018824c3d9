unset PYTHONDONTWRITEBYTECODE
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site
python3 -m compileall -q envdoctor /tmp/site >/dev/null
mkdir -p /tmp/e && cd /tmp/e
python3 -m envdoctor check --no-network >/dev/null 2>&1
for i in 1 2 3 4 5 6 7 8; do python3 $OLDPWD/.whl/phase.py >/dev/null; done
for i in 1 2 3 4 5; do python3 -X importtime -m envdoctor check --no-network 2>$OUT/imp$i.txt >/dev/null; done
python3 -c "
import cProfile,sys,io,contextlib
import envdoctor.cli, envdoctor.doctor
sys.argv=['envdoctor','check','--no-network']
def go():
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            envdoctor.cli.main()
        except SystemExit:
            pass
cProfile.run('go()','$OUT/prof_run.out')"
for i in 1 2 3 4 5 6; do /usr/bin/time -f "%e wall %U+%S cpu" python3 -m envdoctor check --no-network >/dev/null; done
for i in 1 2 3; do /usr/bin/time -f "%e wall %U+%S cpu (python -c pass)" python3 -c pass; done
for i in 1 2 3; do /usr/bin/time -f "%e wall %U+%S cpu (python -S -c pass)" python3 -S -c pass; done
