//! What the operating system says: whether a process is alive, and the machine's load,
//! memory and disks from /proc. No knowledge of jobs.

pub mod account;
pub mod process;
pub mod system;
