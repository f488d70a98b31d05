//! Starting and stopping agents: dispatching a job directory, the detached supervisor that
//! runs the agent and writes its exit line (rendering Claude Code's stream-json on the way),
//! the queue, and kill.

pub mod account;
pub mod acp;
pub mod agents;
pub mod claude;
pub mod dispatch;
pub mod finish;
pub mod foreground;
pub mod gc;
pub mod kill;
pub mod leftovers;
pub mod queue;
pub mod resume;
pub mod session;
pub mod shell;
pub mod slots;
pub mod steps;
pub mod stream;
pub mod supervise;
