//! The names of the files in a job directory (protocol.md), in one place.

/// Metadata, written once by the dispatcher.
pub const META_FILE: &str = "meta.json";
/// The agent's stdout and stderr, ending with the exit line.
pub const LOG_FILE: &str = "output.log";
/// The pid whose liveness means "still running".
pub const PID_FILE: &str = "pid";
/// Latest progress, replaced atomically by the agent.
pub const PROGRESS_FILE: &str = "progress.json";
/// The full prompt the agent reads on stdin.
pub const PROMPT_FILE: &str = "prompt.txt";
/// The script that runs the agent (human-readable, re-runnable).
pub const RUN_SCRIPT: &str = "run.sh";
/// The agent's pending question.
pub const QUESTION_FILE: &str = "clarification.json";
/// The operator's answer to it.
pub const RESPONSE_FILE: &str = "response.json";
/// The agent's pending approval gate.
pub const GATE_FILE: &str = "approval.json";
/// The operator's decision on it.
pub const DECISION_FILE: &str = "approved.json";
/// Answered questions and decided gates, one JSON object a line.
pub const HISTORY_FILE: &str = "history.jsonl";
/// A requested stop: who asked for the agent to be stopped, and when (published before the
/// signal is sent).
pub const STOP_FILE: &str = "stop.json";
/// The one continuation of a job the usage limit stopped, claimed once (published with
/// `link()`) by whichever luzia resumes it at the reset.
pub const LIMIT_RESUME_FILE: &str = "limit-resume.json";
/// Who runs the job, told apart from later processes of the same pid: the supervisor's and the
/// agent's pids, each with its start time.
pub const PROCESS_FILE: &str = "process.json";
/// Room the supervisor keeps on the job's disk for its last words (the exit line and meta.json's
/// `exit_code`), so that a full disk cannot take the result away.
pub const RESERVE_FILE: &str = ".reserve";
/// The agent's own stream-json output, kept as it came when the agent speaks it (output.log then
/// holds the readable rendering).
pub const STREAM_FILE: &str = "stream.jsonl";
/// What the agent is doing now (a tool call in flight), replaced by the supervisor; absent when
/// nothing is in flight.
pub const ACTIVITY_FILE: &str = "activity.json";
/// The paths a job's change touches (NUL-separated), recorded when it ended: what the overlap
/// of unmerged worktree jobs is worked out from without running git.
pub const CHANGED_FILE: &str = "changed-files";
/// The MCP servers luzia gives a Claude Code agent (`--mcp-config`).
pub const MCP_CONFIG_FILE: &str = "mcp.json";
/// luzia's private directory in a job directory: what the agent must not be able to write (which
/// processes are the job's), made before the directory is given to the agent's user.
pub const PRIVATE_DIR: &str = ".luzia";
