//! `luzia mcp`: the stdio MCP server luzia adds to every Claude Code job it starts. Claude
//! Code's permission requests and AskUserQuestion become the job's approval gates and
//! questions (asked and waited for by [`agent`](crate::jobs::hitl::agent), by the same
//! exactly-once rule as `luzia ask` and `luzia gate`), and its progress tool writes
//! `progress.json` as `luzia progress` does. `rpc` is the wire format, `tools` what each tool
//! does, `server` the loop.

pub mod rpc;
pub mod server;
pub mod tools;

#[cfg(test)]
mod tests;
