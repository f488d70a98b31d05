//! Questions and approval gates: the agent's side (`ask`, `gate`, `progress`, waiting for the
//! answer), what the agent side archives to `history.jsonl` and how it is read back, the
//! exactly-once rule both sides publish by (`once`), a request withdrawn when its agent is
//! stopped (`withdraw`), and the operator's side, with the answer
//! and decision files both read; and how a settled one is told to another machine (`settled`). The agent side uses the operator's; never the reverse.

pub mod agent;
pub mod archive;
pub mod history;
pub mod mcp;
pub mod once;
pub mod operator;
pub mod published;
pub mod settled;
