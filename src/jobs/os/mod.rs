//! What the operating system says: whether a process is alive, when one ends (by event), the
//! machine's load, memory and disks from /proc, the users of /etc/passwd, and the heap's free
//! pages handed back. No knowledge of jobs.

pub mod account;
pub mod exits;
pub mod heap;
pub mod process;
pub mod system;
