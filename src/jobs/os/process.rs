//! Is a pid alive? `kill(pid, 0)`, plus a look at `/proc` so that a zombie (dead, not yet
//! reaped by its parent) does not count as a running agent.

use rustix::io::Errno;
use rustix::process::{Pid, test_kill_process};

pub fn is_alive(pid: u32) -> bool {
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    match test_kill_process(p) {
        Ok(()) => !is_zombie(pid),
        // It exists, and belongs to someone else.
        Err(Errno::PERM) => true,
        Err(_) => false,
    }
}

fn is_zombie(pid: u32) -> bool {
    use std::io::Read;
    // One read into a fixed buffer: the state comes early in the line.
    let mut buf = [0u8; 512];
    let Ok(n) = std::fs::File::open(format!("/proc/{pid}/stat")).and_then(|mut f| f.read(&mut buf))
    else {
        return false;
    };
    let stat = &buf[..n];
    // `pid (comm) S ...`: comm may hold spaces and parentheses, so read after the last ')'.
    memchr::memrchr(b')', stat)
        .and_then(|i| stat.get(i + 2))
        .is_some_and(|&state| state == b'Z' || state == b'X')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pid_is_alive_and_impossible_pids_are_not() {
        assert!(is_alive(std::process::id()));
        assert!(!is_alive(0));
        assert!(!is_alive(u32::MAX));
        // Above the kernel's largest pid_max (2^22).
        assert!(!is_alive(999_999_999));
    }

    #[test]
    fn a_reaped_child_is_dead_and_an_unreaped_one_is_a_zombie() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not yet reaped: the pid exists as a zombie, which must not read as alive.
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!is_alive(pid));
        child.wait().unwrap();
        assert!(!is_alive(pid));
    }
}
