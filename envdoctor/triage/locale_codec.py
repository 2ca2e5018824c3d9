"""TRI040: text read or written with the locale's legacy codec (cp1252, GBK, ASCII), not UTF-8.

Python's own words name the codec (``'charmap' codec can't decode byte 0x81``); the cause is the
process's encoding, whatever code opened the file. Python's logging reports a record it cannot
encode (``--- Logging error ---``) and goes on, and a run that logs training steps after the line
did not end there: neither is a failure.
"""

from __future__ import annotations

from envdoctor.triage.draft import Draft, Log, finding, frames
from envdoctor.triage.interface import Match
from envdoctor.triage.logging_errors import printed_by_logging
from envdoctor.triage.missing import went_on

#: what a codec's name says about the process's locale
_LOCALE = {
    "charmap": "a Windows single-byte code page (cp1252 on Western systems)",
    "mbcs": "the Windows ANSI code page",
    "gbk": "the GBK code page of a Chinese Windows",
    "gb2312": "a Chinese GB2312 locale",
    "gb18030": "a Chinese GB18030 locale",
    "big5": "a Traditional Chinese Big5 locale",
    "shift_jis": "a Japanese Shift-JIS locale",
    "euc_jp": "a Japanese EUC-JP locale",
    "euc_kr": "a Korean EUC-KR locale",
    "ascii": 'a POSIX "C" locale (ASCII; a minimal container image without C.UTF-8)',
}


def legacy_codec(ms: list[Match], log: Log) -> list[Draft]:
    """The locale's codec met UTF-8 text (TRI040); nothing where logging reported it and went on."""
    ms = [m for m in ms if not printed_by_logging(m)]
    if not ms or went_on(log, ms[0].line_no):
        return []
    first = ms[0]
    codec = first.groups.get("codec") or "?"
    reads = str(first.groups.get("op") or "").startswith("decode")
    locale = _LOCALE.get(codec) or (f"the Windows code page {codec}" if codec.startswith("cp") else codec)
    raised = frames(first)
    opened = next((f for f in reversed(raised) if "-packages/" in f.replace("\\", "/")), None)
    who = f" ({opened.strip()[:160]})" if opened else ""
    what = (
        f"Python {'read' if reads else 'wrote'} text with the '{codec}' codec, the encoding of {locale}, "
        f"which cannot {'read these bytes' if reads else 'write this character'}{who}: open() and "
        "Path.read_text / write_text use the locale's encoding when the code names none (every Python "
        "before 3.15), and the stack's text files (chat templates, tokenizer files, datasets, model "
        "cards) are UTF-8"
    )
    fix = (
        "set PYTHONUTF8=1 in the run's environment (UTF-8 mode: Windows `set PYTHONUTF8=1` or "
        "`$env:PYTHONUTF8=1`, Linux `export PYTHONUTF8=1` or `export LANG=C.UTF-8 LC_ALL=C.UTF-8`); "
        'in your own code pass encoding="utf-8" to open()'
        + ("; a data file of yours in yet another encoding: convert it to UTF-8 first" if reads else "")
    )
    if opened and "/trl/chat_template_utils.py" in opened.replace("\\", "/"):
        fix += "; TRL 1.6.0 reads its chat templates as UTF-8 itself (pip install 'trl>=1.6.0')"
    return [finding("TRI040", ms, log, what, fix, codec=codec)]
