//! What the operating system says: whether a process is alive, when one ends (by event), and the
//! machine's load, memory and disks from /proc. No knowledge of jobs.

pub mod exits;
pub mod process;
pub mod system;
