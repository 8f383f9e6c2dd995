"""A scripted LLM read from a reply file: run a method with no model from the command line (``--llm scripted:FILE``).

Plugin authors, tutorials and CI need a run that makes no model call and still gives each step a reply
that means something (a summary that is a summary, an answer that names a turn). ``ScriptedLLM`` does that
from Python; this module reads the same kind of script from a small JSON file, so ``workbench eval`` can
use it. The file is untrusted input: every field is checked on load and an error names the file and the
field (``ScriptedFileError``). The format (docs/method-contract.md, "Run it with no model")::

    {
      "scripted_replies": 1,
      "model": "scripted-topicbuckets",
      "roles": {
        "topicbuckets.summarize": {"replies": ["Caroline talks about a support group.", "..."], "then": "last"},
        "topicbuckets.answer": {"reply": "a support group"},
        "topicbuckets.*": {"reply": "auto"}
      },
      "default": "auto"
    }

- ``roles`` maps a call's role to its rule. A key is a role (``<method>.<step>``) or a pattern with ``*``
  (``topicbuckets.*``). A call takes the first rule whose key equals its role, then its role without a
  ``.repair``/``.retry`` suffix, then its role without a variant label (``name[label].step`` ->
  ``name.step``, so a labelled ablation reads its method's script), then the first pattern that matches,
  in file order.
- A rule is ``{"reply": R}`` (the same reply every time) or ``{"replies": [R, ...], "then": ...}`` (in
  order; once used up, ``then`` says what follows: ``"last"`` repeats the last one (the default),
  ``"auto"`` gives schema-valid minimal replies, ``"error"`` fails the call). A bare string or list is
  short for the two forms; an object reply always goes inside ``reply`` (so a misspelt rule is an error,
  never a reply).
- A reply ``R`` is a string (sent as it is), any other JSON value (sent as JSON: what a schema asks for),
  or ``"auto"``: the smallest reply valid for the call's schema (``fake.auto_reply``), ``"unknown"`` for
  free text.
- ``default`` answers a call no rule covers: ``"auto"`` (the default), ``"error"`` (the call fails with an
  ``LLMError`` naming its role and the file), or a reply.
- ``model`` names the replies in manifests, result rows and cassettes (default ``scripted:<file name>``).

``scripted`` with no file (``--llm scripted``) answers every call with ``"auto"``.
"""
from __future__ import annotations

import fnmatch
import json
import os
import threading
from pathlib import Path
from typing import Any

from .base import BaseLLM, Generation
from .errors import LLMError
from .fake import auto_reply

#: the format version a file states (``"scripted_replies": 1``)
FORMAT_VERSION = 1
#: a reply file is a script, not a data set: anything larger is refused before it is parsed
MAX_FILE_BYTES = 16 * 1024 * 1024
THEN = ("last", "auto", "error")
AUTO = "auto"
ERROR = "error"
_TOP_KEYS = {"scripted_replies", "model", "roles", "default", "about"}


class ScriptedFileError(ValueError):
    """A reply file that cannot be used; the message names the file and the field."""


class _Rule:
    """One role's replies: a fixed reply, or a list used in order and then ``then``."""

    def __init__(self, replies: list, then: str, fixed: bool):
        self.replies = replies
        self.then = then
        self.fixed = fixed
        self.used = 0

    def next(self, role: str, source: str):
        if self.fixed:
            return self.replies[0]
        if self.used < len(self.replies):
            self.used += 1
            return self.replies[self.used - 1]
        if self.then == "last":
            return self.replies[-1]
        if self.then == AUTO:
            return AUTO
        raise LLMError(f"{source}: the {len(self.replies)} scripted replies for role {role!r} are used up "
                       "(its rule says then: \"error\"; add replies or set then to \"last\" or \"auto\")")


def _check_reply(value: Any, where: str) -> Any:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ScriptedFileError(f"{where}: a reply must be a string or a JSON value ({exc})") from None
    return value


def _rule(value: Any, where: str) -> _Rule:
    if isinstance(value, dict):
        if "reply" not in value and "replies" not in value:
            raise ScriptedFileError(f"{where}: a rule is {{\"reply\": R}} or {{\"replies\": [R, ...]}}; an "
                                    "object reply goes inside reply")
        unknown = set(value) - {"reply", "replies", "then"}
        if unknown:
            raise ScriptedFileError(f"{where}: unknown field(s) {sorted(unknown)}; a rule has reply, or replies "
                                    "and then")
        if "reply" in value and "replies" in value:
            raise ScriptedFileError(f"{where}: give reply or replies, not both")
        if "reply" in value:
            if "then" in value:
                raise ScriptedFileError(f"{where}.then: only a list of replies has a then")
            return _Rule([_check_reply(value["reply"], f"{where}.reply")], "last", fixed=True)
        replies = value["replies"]
        then = value.get("then", "last")
        if then not in THEN:
            raise ScriptedFileError(f"{where}.then: {then!r}; expected one of {', '.join(map(repr, THEN))}")
    elif isinstance(value, list):
        replies, then = value, "last"
        where = f"{where} (a list: its replies)"
    else:
        return _Rule([_check_reply(value, where)], "last", fixed=True)
    if not isinstance(replies, list) or not replies:
        raise ScriptedFileError(f"{where}: replies must be a non-empty list")
    return _Rule([_check_reply(r, f"{where}[{i}]") for i, r in enumerate(replies)], then, fixed=False)


def parse_script(raw: Any, source: str) -> tuple[dict[str, _Rule], Any, str | None]:
    """``(rules by role key, default, model)`` from a reply file's parsed JSON; ``source`` names it in errors."""
    if not isinstance(raw, dict):
        raise ScriptedFileError(f"{source}: expected a JSON object with \"roles\", got {type(raw).__name__}")
    version = raw.get("scripted_replies")
    if version != FORMAT_VERSION:
        raise ScriptedFileError(f"{source}: field \"scripted_replies\" must be {FORMAT_VERSION} (the format "
                                f"version), got {version!r}")
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ScriptedFileError(f"{source}: unknown field(s) {sorted(unknown)}; expected {sorted(_TOP_KEYS)}")
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip() or len(model) > 200):
        raise ScriptedFileError(f"{source}: field \"model\" must be a non-empty string of at most 200 characters")
    roles = raw.get("roles", {})
    if not isinstance(roles, dict):
        raise ScriptedFileError(f"{source}: field \"roles\" must map roles to rules, got {type(roles).__name__}")
    rules = {}
    for key, value in roles.items():
        if not key.strip():
            raise ScriptedFileError(f"{source}: roles has an empty role name")
        rules[key] = _rule(value, f"{source}: roles[{key!r}]")
    default = raw.get("default", AUTO)
    if default != ERROR:
        default = _check_reply(default, f"{source}: default")
    return rules, default, model


def _unlabelled(role: str) -> str:
    """``name[label].step`` -> ``name.step``: a labelled variant's calls read its method's rules."""
    head, dot, step = role.partition(".")
    return f"{head.split('[', 1)[0]}{dot}{step}" if "[" in head else role


class ScriptedFileLLM(BaseLLM):
    """Replies from a parsed reply file (``load_scripted``); deterministic, thread-safe, no model."""

    #: scripted replies stand in for the offline models (as ``ScriptedLLM``), so ``profile="auto"`` gives a
    #: method its small profile here, as it does in ``check_method`` and the tests
    small_model = True

    def __init__(self, rules: dict[str, _Rule], *, default: Any = AUTO, model: str = "scripted",
                 source: str = "scripted"):
        super().__init__()
        self.rules = rules
        self.default = default
        self.model = model
        self.source = source
        self.requests: list[dict] = []
        self.by_role: dict[str, int] = {}  # calls per role, for a run's note of what the script answered
        self.defaulted: dict[str, int] = {}  # calls no rule covered, by role
        self._lock = threading.Lock()

    def _find(self, role: str) -> _Rule | None:
        base = role.split(".repair")[0].split(".retry")[0]
        for key in dict.fromkeys((role, base, _unlabelled(role), _unlabelled(base))):
            if key in self.rules:
                return self.rules[key]
        for key, rule in self.rules.items():
            if "*" in key and any(fnmatch.fnmatchcase(r, key) for r in (role, _unlabelled(base))):
                return rule
        return None

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        role = role or ""
        with self._lock:
            self.requests.append({"role": role, "schema": schema})
            self.by_role[role] = self.by_role.get(role, 0) + 1
            rule = self._find(role)
            if rule is None:
                self.defaulted[role] = self.defaulted.get(role, 0) + 1
                if self.default == ERROR:
                    raise LLMError(f"{self.source}: no rule for role {role!r} and default is \"error\" (add "
                                   f"roles[{role!r}] or set default to \"auto\")")
                reply = self.default
            else:
                reply = rule.next(role, self.source)
        if reply == AUTO:
            reply = auto_reply(schema) if schema is not None else "unknown"
        return Generation(reply if isinstance(reply, str) else json.dumps(reply), self.model)

    def __repr__(self) -> str:
        return f"ScriptedFileLLM({self.source!r}, model={self.model!r}, {len(self.rules)} rules)"


def auto_llm(model: str = "scripted") -> ScriptedFileLLM:
    """``--llm scripted``: every call gets the smallest reply valid for its schema."""
    return ScriptedFileLLM({}, default=AUTO, model=model, source="scripted")


def load_scripted(path: str | os.PathLike) -> ScriptedFileLLM:
    """The scripted LLM a reply file describes (module docstring); ``ScriptedFileError`` names what is wrong."""
    p = Path(path)
    source = str(p)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise ScriptedFileError(f"{source}: no such reply file (--llm scripted:FILE)") from None
    except OSError as exc:
        raise ScriptedFileError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    if not p.is_file():
        raise ScriptedFileError(f"{source}: not a file")
    if size > MAX_FILE_BYTES:
        raise ScriptedFileError(f"{source}: {size} bytes; a reply file may hold at most {MAX_FILE_BYTES}")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptedFileError(f"{source}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise ScriptedFileError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    try:
        raw = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ScriptedFileError(f"{source}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except ValueError as exc:
        raise ScriptedFileError(f"{source}: {exc}") from None
    except RecursionError:
        raise ScriptedFileError(f"{source}: nested too deeply to read") from None
    rules, default, model = parse_script(raw, source)
    return ScriptedFileLLM(rules, default=default, model=model or f"scripted:{p.name}", source=source)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON value (write a number or a string)")
