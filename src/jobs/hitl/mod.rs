//! Questions and approval gates: the agent's side (`ask`, `gate`, `progress`, waiting for the
//! answer) and the operator's side (answering and deciding exactly once).

pub mod agent;
pub mod operator;
