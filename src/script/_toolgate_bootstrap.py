"""Starts a run_script script inside the sandbox (runs as `python -I`, after the privilege drop).

It closes inherited descriptors, reads the script from the gateway (the first line on fd 4),
puts the runtime directory first on sys.path (so a workspace file cannot shadow agent_tools)
and runs the script as __main__ named "script.py".
"""

import json
import linecache
import os
import sys
import traceback
import types

_REPLY_FD = 4


def _close_inherited_fds() -> None:
    # bwrap passes through every descriptor the gateway inherited; keep only 0-4.
    for name in os.listdir("/proc/self/fd"):
        if int(name) > _REPLY_FD:
            try:
                os.close(int(name))
            except OSError:
                pass


def _read_start_line() -> dict:
    # Nothing else is sent before the script's first request, so reading up to the newline is exact.
    chunks = []
    while True:
        chunk = os.read(_REPLY_FD, 65536)
        if not chunk:
            raise SystemExit("toolgate: the gateway closed the channel before sending the script")
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    start = json.loads(b"".join(chunks))
    if start.get("op") != "start" or not isinstance(start.get("code"), str):
        raise SystemExit("toolgate: unexpected start message")
    return start


def main() -> None:
    _close_inherited_fds()
    os.umask(0)  # the next script of the session runs under another uid and must still use these files
    os.set_blocking(_REPLY_FD, True)
    code = _read_start_line()["code"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.argv = ["script.py"]
    linecache.cache["script.py"] = (len(code), None, code.splitlines(True), "script.py")
    module = types.ModuleType("__main__")
    module.__file__ = "script.py"
    module.__builtins__ = __builtins__
    sys.modules["__main__"] = module
    try:
        exec(compile(code, "script.py", "exec"), module.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # report like Python would, without this file's frame
        traceback.print_exception(type(error), error, error.__traceback__.tb_next if error.__traceback__ else None)
        sys.exit(1)


main()
