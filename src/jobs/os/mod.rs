//! What the operating system says: whether a process is alive, when one ends (by event), the
//! machine's load, memory and disks from /proc, and the users of /etc/passwd. No knowledge of jobs.

pub mod account;
pub mod exits;
pub mod process;
pub mod system;
