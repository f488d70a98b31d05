//! Starting and stopping agents: dispatching a job directory, the detached supervisor that
//! runs the agent and writes its exit line, the queue, and kill.

pub mod account;
pub mod claude;
pub mod dispatch;
pub mod finish;
pub mod kill;
pub mod leftovers;
pub mod queue;
pub mod supervise;
