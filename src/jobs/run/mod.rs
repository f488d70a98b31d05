//! Starting and stopping agents: dispatching a job directory, the detached supervisor that
//! runs the agent and writes its exit line, the queue, and kill.

pub mod account;
pub mod dispatch;
pub mod finish;
pub mod foreground;
pub mod kill;
pub mod leftovers;
pub mod queue;
pub mod resume;
pub mod session;
pub mod shell;
pub mod supervise;
