"""The dataset lacks a column the run reads (TRI015): the user's data, not the stack.

Three shapes, each read from the traceback model (``traceback.Traceback``):

1. **The datasets library's own words**: ``Column name ['prompt'] not in the dataset. Current
   columns in the dataset: ['problem', 'solution']`` (``remove_columns``, ``rename_column``,
   ``select_columns``, a row's ``__getitem__``), ``Column 'prompt' not found in the dataset``,
   ``Column (label) not in table columns (…)``: the column asked for, and those the dataset has.
2. **A trainer reading a row's column** (DAT002, the data rule's own id): a ``KeyError: 'text'``
   raised in a TRL trainer's data preparation (SFT's ``tokenize``, DPO's ``tokenize_row``, TRL's
   ``data_utils``) for a column that trainer reads (``trainercols``: the table per TRL release): the
   dataset given to the trainer has no such column.
3. **A training script's own check of its column argument**: a message that names a dataset's
   column or field and refuses it ("Dataset Question Field Error: {prompt_column} is not
   supported.", "prompt column 'question' not found in dataset"), with the script's argument that
   names the column (a ``*_column`` / ``*_field`` name).

TRI015's fix: give the dataset the column the code reads (``dataset.rename_column(old, new)``) or point
the script's column argument at a column the dataset has. An error: the data is refused on every
run, whatever the releases.
"""

from __future__ import annotations

import re

from envdoctor.findings import Finding, Severity
from envdoctor.triage import trainercols
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Traceback

RULE = "TRI015"
_LIST = r"\[[^\]\n]{0,1000}\]"
#: the datasets library's messages (datasets/arrow_dataset.py, formatting/formatting.py)
_DATASETS = (
    re.compile(
        r"(?:Columns?(?: name| to remove)?|Input column|Original column names?) "
        r"(?P<col>" + _LIST + r"|'?[^\s']{1,200}'?) not (?:in|found in) the dataset\.?"
        r"(?: (?:Current columns in the dataset|Please provide a column selected in): ?"
        r"(?P<have>" + _LIST + "))?"
    ),
    re.compile(r"Column \((?P<col>[^)\n]{1,200})\) not in table columns \((?P<have>" + _LIST + r")\)"),
)
#: a script's own words: a dataset's column or field it cannot find or does not take
_SCRIPT = re.compile(
    r"(?i)\b(?:dataset|data|question|prompt|answer|completion|solution)\b[^.\n]{0,60}\b(?:column|field|key)s?\b"
    r"[^\n]{0,200}?\b(?:not (?:supported|found|present|in|exist\w*)|missing|does not exist|doesn't exist|"
    r"is not (?:a )?(?:valid|supported|available))"
)
#: the script's argument that names the column (``{prompt_column}``, ``--prompt_column``,
#: ``dataset_prompt_column``)
_COLUMN_ARG = re.compile(r"(?P<arg>\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:column|field)s?(?:_name)?)\b")
_QUOTED = re.compile(r"['\"`](?P<col>[\w.-]{1,80})['\"`]")


def _names(text: str) -> list[str]:
    return re.findall(r"['\"]?([\w.-]{1,80})['\"]?", text.strip("[]"))[:8] if text else []


def missing_column(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI015 for ``tb`` (module docstring), or None."""
    if tb.name not in ("KeyError", "ValueError", "IndexError", "AttributeError") or not tb.message:
        return None
    message = tb.message.strip()[:2000]
    col, have, arg, source = "", "", "", ""
    for rx in _DATASETS:
        found = rx.search(message)
        if found is not None:
            col = ", ".join(_names(found.group("col"))) or found.group("col")
            have = ", ".join(_names(found.group("have") or ""))
            source = "datasets"
            break
    if not source and tb.name == "KeyError" and tb.frames:
        trl = log.versions.get("trl")
        read = trainercols.column_read(tb, trl.version if trl is not None else None)
        if read is not None:
            return trainer_column(read, m, log)
    if not source:
        found = _SCRIPT.search(message)
        args = _COLUMN_ARG.findall(message)
        if found is not None and args:
            arg = args[0]
            quoted = [q for q in _QUOTED.findall(message) if q != arg]
            col, source = (quoted[0] if quoted else ""), "script"
    if not source:
        return None
    asked = f"'{col}'" if col and not col.startswith("'") else col
    if source == "datasets":
        what = f"the dataset has no column {asked or 'of the name asked for'}"
        what += f" (its columns: {have})" if have else ""
    else:
        what = (
            f"the training script refused the dataset: the column its {arg} names "
            + (f"({asked}) " if asked else "")
            + "is not in the dataset"
        )
    fix = (
        "give the dataset the column the code reads (dataset = dataset.rename_column('<its column>', "
        f"'{col or '<the column asked for>'}'))"
        if source != "script"
        else f"set the script's {arg} (--{arg} on its command line, or its config file) to the dataset's "
        "own column (the dataset card lists them: e.g. problem / question), or rename the dataset's column "
        "(dataset.rename_column)"
    )
    if source == "datasets" and have:
        fix += f", or ask for one of the columns it has ({have})"
    d = finding(RULE, [m], log, what, fix, column=col or None, columns=have or None, argument=arg or None)
    f = d.finding  # the data is refused on every run, whatever the releases: an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


def trainer_column(read: trainercols.ColumnRead, m: Match, log: Log) -> Draft:
    """DAT002 for a trainer's read of a column the dataset lacks: an error where the log's TRL
    release reads that column (or the log shows none), a warning where only other releases do."""
    from envdoctor.checks.data import column_fix

    trainer = read.trainer or "TRL's trainer"
    f = read.frame
    named = f" (the column {read.config_key} names)" if read.config_key else ""
    what = (
        f"the dataset given to {trainer} has no '{read.column}' column{named}: {trainer} reads it "
        f"from every row in its data preparation ({f.at}{' in ' + f.function if f.function else ''})"
    )
    if not read.listed:
        what += "; the log's TRL release is not one envdoctor read this column for"
    fix = column_fix(read.column, read.config_key or None)
    fix += (
        "; where a framework builds the dataset for TRL (its own DPO or SFT pipeline), install the "
        "TRL release it pins"
    )
    d = finding(
        "DAT002",
        [m],
        log,
        what,
        fix,
        column=read.column,
        trainer=read.trainer or None,
        config_key=read.config_key or None,
    )
    return at_severity(d, Severity.ERROR if read.listed else Severity.WARNING)
