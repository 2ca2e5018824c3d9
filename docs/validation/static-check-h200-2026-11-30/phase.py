import time, sys
t0=time.perf_counter()
import click
t1=time.perf_counter()
import envdoctor.cli
t2=time.perf_counter()
import envdoctor.doctor
t3=time.perf_counter()
sys.argv=['envdoctor','check','--no-network']
import io, contextlib
buf=io.StringIO()
with contextlib.redirect_stdout(buf):
    try:
        envdoctor.cli.main()
    except SystemExit:
        pass
t4=time.perf_counter()
print(f"click {1000*(t1-t0):.0f} cli {1000*(t2-t1):.0f} doctor {1000*(t3-t2):.0f} run {1000*(t4-t3):.0f} ms", file=sys.stderr)
