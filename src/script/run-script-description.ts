/** What teaches a model when and how to use run_script; kept under ~3,000 characters. */
export function runScriptDescription(limits: { maxCalls: number; concurrency: number; timeoutSec: number }): string {
  return `Run a Python 3 script (standard library only) in a sandbox; the script calls this gateway's tools itself and only what it prints comes back to you.

Use it instead of calling tools one by one whenever a task needs many calls (more than ~5) or the results need filtering, joining or aggregating: one run_script replaces hundreds of round trips and keeps raw results out of your context. Print a compact summary, not raw data.

API (import from agent_tools; tool names are the same <service>__<tool> names you see):
- call(tool, args) -> the structured result (dict) if the tool gives one, else its text (a JSON text is parsed). Raises ToolError on failure.
- call_many(tool, args_list, return_errors=False) -> list of results in input order; the gateway runs them concurrently (batches of 50). With return_errors=True a failed item is the ToolError itself; otherwise the first failure is raised.
- call_raw(tool, args) -> {"text", "structured", "is_error"}; never raises for the tool's own error.
- progress(done, total=None, message="") shows progress to the user.
- ToolError has .tool, .code (tool_error, not_allowed, unknown_tool, invalid_args, limit, unavailable, timeout), .message, .index.

Example:
from agent_tools import call, call_many, progress, ToolError
from collections import Counter
devices = call("fleet__list_devices", {"pageSize": 500})["devices"]
rows = call_many("fleet__get_device_status", [{"sn": d["sn"]} for d in devices], return_errors=True)
ok = [r for r in rows if not isinstance(r, ToolError)]
progress(len(rows), len(devices), "summarising")
print(Counter(r["status"] for r in ok), "failed:", len(rows) - len(ok))

Permissions:
- Read tools can always be called.
- Write tools must be listed in \`tools\`; the user may be asked once to approve the whole script (allow once / deny) before it runs. An unlisted write tool raises ToolError (not_allowed).
- Destructive tools and long-task tools cannot be called from a script: call them directly instead. Listing one rejects the run before it starts.

Limits: ${limits.maxCalls} tool calls per script (the next raises ToolError code "limit"), ${limits.concurrency} calls in flight (more are queued), ${Math.round(limits.timeoutSec / 60)} minutes; no network; memory, processes and file sizes are bounded. The current directory is this session's workspace: files you write there persist between runs and can be read with read_workspace_file. A long script moves to the background and its result arrives later as a new message.

Returns: a first line "run_script <ok|failed|timed out|cancelled> · N calls (F failed) · T s · details: .agent/scripts/<id>/", then what the script printed (cut after 20,000 characters; the full output is in output.txt there), then on failure the end of the traceback. calls.jsonl there lists every call.`;
}
