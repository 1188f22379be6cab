"""Call the gateway's MCP tools from a run_script script.

Every call goes through the gateway (the same policy and result processing as a call
made by the model) but not through the model. Only what the script prints is returned.

    from agent_tools import call, call_many, call_raw, progress, ToolError

    sns = ["A1", "A2", "A3"]
    rows = call_many("fleet__get_device_status", [{"sn": sn} for sn in sns], return_errors=True)
    for sn, row in zip(sns, rows):
        if isinstance(row, ToolError):
            print(sn, "failed:", row.code, row.message)
        else:
            print(sn, row["status"])
    progress(len(rows), len(sns), "done")

Tool names are the gateway's names, "<service>__<tool>". Every function may be called from
any thread; a script has at most a fixed number of calls in flight (the gateway queues the
rest) and a maximum number of calls in total (past it a call raises ToolError code "limit").
The module cannot be used from a forked child process.

Wire: one JSON object per line, requests on fd 3, replies on fd 4, each request with an id;
one reader thread hands each reply to the thread waiting for it.
"""

import json
import os
import threading
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ["ToolError", "call", "call_many", "call_raw", "progress", "BATCH_SIZE"]

#: call_many sends its requests in batches of this size.
BATCH_SIZE = 50
# How many calls before the end of a batch the next batch is sent (twice the default concurrency).
_LOOKAHEAD = 8

_REQUEST_FD = 3
_REPLY_FD = 4
_CODES = ("tool_error", "not_allowed", "unknown_tool", "invalid_args", "limit", "unavailable", "timeout")


class ToolError(Exception):
    """A tool call failed.

    Attributes:
        tool: the tool's name as called.
        code: "tool_error" (the tool itself reported an error), "not_allowed", "unknown_tool",
            "invalid_args", "limit", "unavailable" or "timeout".
        message: what went wrong (for "tool_error": the tool's own text).
        index: the position in the args_list of call_many, else None.
    """

    def __init__(self, tool: str, code: str, message: str, index: Optional[int] = None) -> None:
        super().__init__(tool, code, message, index)
        self.tool = tool
        self.code = code if code in _CODES else "unavailable"
        self.message = message
        self.index = index

    def __str__(self) -> str:
        where = "" if self.index is None else " (item {})".format(self.index)
        return "{}{}: {}: {}".format(self.tool, where, self.code, self.message)

    def __repr__(self) -> str:
        return "ToolError(tool={!r}, code={!r}, message={!r}, index={!r})".format(
            self.tool, self.code, self.message, self.index
        )


class _Pending:
    """One request waiting for its reply."""

    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: Optional[Dict[str, Any]] = None


class _Bridge:
    """The fd 3/4 connection: numbered requests out, one reader thread routing replies back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: Dict[int, _Pending] = {}
        self._next_id = 1
        self._reader: Optional[threading.Thread] = None
        self._closed: Optional[str] = None
        self._pid = os.getpid()

    def send(self, messages: Sequence[Dict[str, Any]], want_reply: bool = True) -> List[_Pending]:
        """Numbers and writes `messages` in one write; returns what to wait on, in order."""
        if os.getpid() != self._pid:
            raise ToolError("", "unavailable", "agent_tools cannot be used from a forked process")
        lines = []
        waiting: List[_Pending] = []
        with self._lock:
            self._start_reader()
            for message in messages:
                request_id = self._next_id
                self._next_id += 1
                # "id" first, so the gateway can answer even a line too long to parse.
                lines.append(_encode(dict({"id": request_id}, **message)))
                if want_reply:
                    pending = _Pending()
                    if self._closed is not None:
                        pending.reply = _failure("unavailable", self._closed)
                        pending.done.set()
                    else:
                        self._pending[request_id] = pending
                    waiting.append(pending)
        self._write(b"".join(lines))
        return waiting

    def _write(self, data: bytes) -> None:
        with self._write_lock:
            view = memoryview(data)
            try:
                while view:
                    written = os.write(_REQUEST_FD, view)
                    view = view[written:]
            except OSError as error:
                self._close("the gateway connection is closed ({})".format(error.strerror))

    def _start_reader(self) -> None:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read_replies, name="agent_tools-reader", daemon=True)
            self._reader.start()

    def _read_replies(self) -> None:
        try:
            with os.fdopen(_REPLY_FD, "rb", buffering=65536, closefd=False) as replies:
                for line in replies:
                    self._deliver(line)
        except OSError:
            pass
        self._close("the gateway connection is closed")

    def _deliver(self, line: bytes) -> None:
        try:
            reply = json.loads(line)
            request_id = reply["id"]
        except (ValueError, KeyError, TypeError):
            return
        if not isinstance(request_id, int):
            return
        with self._lock:
            pending = self._pending.pop(request_id, None)
        if pending is not None:
            pending.reply = reply
            pending.done.set()

    def _close(self, reason: str) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = reason
            waiting, self._pending = self._pending, {}
        for pending in waiting.values():
            pending.reply = _failure("unavailable", reason)
            pending.done.set()


def _encode(message: Dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def _failure(code: str, message: str) -> Dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message}}


_bridge = _Bridge()


def _check_request(tool: Any, args: Any, index: Optional[int] = None) -> Dict[str, Any]:
    if not isinstance(tool, str) or not tool:
        raise ToolError(str(tool), "invalid_args", "the tool name must be a non-empty string", index)
    if not isinstance(args, dict):
        raise ToolError(tool, "invalid_args", "args must be a dict, got {}".format(type(args).__name__), index)
    try:
        _encode(args)
    except (TypeError, ValueError) as error:
        raise ToolError(tool, "invalid_args", "args are not JSON-serialisable: {}".format(error), index) from None
    return {"op": "call", "tool": tool, "args": args}


def _raw_result(tool: str, reply: Optional[Dict[str, Any]], index: Optional[int]) -> Dict[str, Any]:
    """The {text, structured, is_error} of a reply, or the ToolError of a gateway-side failure."""
    if reply is None or not reply.get("ok"):
        error = (reply or {}).get("error") or {}
        raise ToolError(tool, str(error.get("code", "unavailable")), str(error.get("message", "no reply")), index)
    result = reply.get("result") or {}
    return {
        "text": result.get("text", ""),
        "structured": result.get("structured"),
        "is_error": bool(result.get("is_error", False)),
    }


def _value(tool: str, raw: Dict[str, Any], index: Optional[int]) -> Any:
    """What call() returns: structured content, else the text (parsed when it is a JSON object or array)."""
    if raw["is_error"]:
        raise ToolError(tool, "tool_error", raw["text"] or "the tool reported an error", index)
    if raw["structured"] is not None:
        return raw["structured"]
    text = raw["text"]
    stripped = text.strip()
    if stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def call_raw(tool: str, args: Dict[str, Any]) -> Dict[str, Any]:
    """Call `tool` with `args` and return {"text": str, "structured": dict | None, "is_error": bool}.

    A tool that reports an error does not raise: is_error is True. Raises ToolError only for
    failures that are not the tool's own (not_allowed, unknown_tool, invalid_args, limit,
    unavailable, timeout).
    """
    (pending,) = _bridge.send([_check_request(tool, args)])
    pending.done.wait()
    return _raw_result(tool, pending.reply, None)


def call(tool: str, args: Dict[str, Any]) -> Any:
    """Call `tool` with `args`; return its structured result (a dict) when it gives one, else its text.

    A text that is a JSON object or array is returned parsed. Raises ToolError (code
    "tool_error" when the tool itself reported the error).
    """
    return _value(tool, call_raw(tool, args), None)


def call_many(tool: str, args_list: Sequence[Dict[str, Any]], return_errors: bool = False) -> List[Any]:
    """Call `tool` once per item of `args_list`; return the results (as call() gives them) in input order.

    Requests go to the gateway in batches of BATCH_SIZE and run concurrently under the script's
    limit. With return_errors=True a failed item is its ToolError (with .index) at its position.
    Otherwise the first failure by position is raised once the calls in flight have settled, and
    no further batch is sent.
    """
    items = list(args_list)
    requests = [_check_request(tool, args, index) for index, args in enumerate(items)]
    batches = [requests[start : start + BATCH_SIZE] for start in range(0, len(requests), BATCH_SIZE)]
    results: List[Any] = []
    first_error: Optional[ToolError] = None
    current = _bridge.send(batches[0]) if batches else []
    for number in range(len(batches)):
        start = number * BATCH_SIZE
        following: Optional[List[_Pending]] = None
        for offset, pending in enumerate(current):
            # The next batch goes out while the last few calls of this one still run, so the gateway's
            # concurrency never idles between batches; never once a failure is known.
            if (
                following is None
                and number + 1 < len(batches)
                and offset == max(0, len(current) - _LOOKAHEAD)
                and (return_errors or first_error is None)
            ):
                following = _bridge.send(batches[number + 1])
            pending.done.wait()
            try:
                value: Union[Any, ToolError] = _value(tool, _raw_result(tool, pending.reply, start + offset), start + offset)
            except ToolError as error:
                value = error
                first_error = first_error or error
            results.append(value)
        if first_error is not None and not return_errors:
            for pending in following or []:
                pending.done.wait()
            raise first_error
        if following is None and number + 1 < len(batches):
            following = _bridge.send(batches[number + 1])
        current = following or []
    return results


def progress(done: Union[int, float], total: Optional[Union[int, float]] = None, message: str = "") -> None:
    """Report progress (shown in the conversation, at most once a second); `total` may be unknown."""
    for name, value in (("done", done), ("total", total)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ValueError("progress: {} must be a non-negative number".format(name))
    report: Dict[str, Any] = {"op": "progress", "done": done, "message": str(message)[:1000]}
    if total is not None:
        report["total"] = total
    _bridge.send([report], want_reply=False)
