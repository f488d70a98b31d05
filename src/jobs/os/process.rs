//! Processes as the system knows them. A pid names a process only while it lives: once it has
//! ended, the kernel gives the number to a later process. What tells the two apart is the start
//! time, field 22 of `/proc/PID/stat` (clock ticks after boot), with the boot's id. Liveness and
//! signals here go through that identity, and a signal goes through a pidfd where the kernel has
//! them, so that the check and the signal are about one and the same process. No knowledge of
//! jobs.

use std::io::{self, Read};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::io::Errno;
use rustix::process::{
    Pid, PidfdFlags, Signal, kill_process, kill_process_group, pidfd_open, pidfd_send_signal,
    test_kill_process, test_kill_process_group,
};

/// A process given by no more than a number may have started this long before the time it is
/// said to have started near (a dispatcher that notes the time just after spawning) ...
pub const NEAR_BEFORE_SECS: i64 = 300;
/// ... or this long after it (spawned just after the time was taken, which is rounded to the
/// second). A process that started later than that has been given a reused pid.
pub const NEAR_AFTER_SECS: i64 = 10;

/// `kill(pid, 0)`, and not a zombie: the number is in use, by whatever process. Says nothing
/// about which process that is; [`ProcessRef`] does.
pub fn is_alive(pid: u32) -> bool {
    let Some(p) = raw_pid(pid) else {
        return false;
    };
    match test_kill_process(p) {
        Ok(()) => !is_zombie(pid),
        // It exists, and belongs to someone else.
        Err(Errno::PERM) => true,
        Err(_) => false,
    }
}

fn raw_pid(pid: u32) -> Option<Pid> {
    i32::try_from(pid).ok().and_then(Pid::from_raw)
}

fn is_zombie(pid: u32) -> bool {
    read_stat(pid).is_ok_and(|s| s.is_zombie())
}

/// The two fields of `/proc/PID/stat` that matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    state: u8,
    /// Field 5: the process group.
    pgrp: i64,
    /// Field 22: clock ticks after boot.
    start: u64,
}

impl Stat {
    fn is_zombie(self) -> bool {
        matches!(self.state, b'Z' | b'X')
    }
}

fn read_stat(pid: u32) -> io::Result<Stat> {
    // One read: the kernel produces the whole line at once, and it is a few hundred bytes.
    let mut buf = Vec::with_capacity(1024);
    std::fs::File::open(format!("/proc/{pid}/stat"))?
        .take(8192)
        .read_to_end(&mut buf)?;
    parse_stat(&buf).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreadable stat"))
}

/// `pid (comm) S ppid ...`: comm may hold spaces and parentheses, so the fields are counted from
/// the last `)`.
fn parse_stat(stat: &[u8]) -> Option<Stat> {
    let close = memchr::memrchr(b')', stat)?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    // Field 3 (the state) is the first after it.
    let fields: Vec<&str> = rest.split_ascii_whitespace().take(20).collect();
    Some(Stat {
        state: *fields.first()?.as_bytes().first()?,
        pgrp: fields.get(5 - 3)?.parse().ok()?,
        start: fields.get(22 - 3)?.parse().ok()?,
    })
}

/// Whether any process of group `pgid` is alive (not a zombie). Reads `/proc/*/stat`: called only
/// once `kill(-pgid, 0)` has said the group exists. A `/proc` that cannot be listed says yes.
fn has_live_member(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|e| {
        e.file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .and_then(|pid| read_stat(pid).ok())
            .is_some_and(|s| s.pgrp == i64::from(pgid) && !s.is_zombie())
    })
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): start times count from boot, so a start
/// recorded in another boot names nobody now.
pub fn boot_id() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    })
    .as_deref()
}

/// When a process started, as recorded beside its pid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    /// Clock ticks after boot (`/proc/PID/stat` field 22).
    pub ticks: u64,
    /// The boot it counts from; `None` when unknown (then any boot matches).
    pub boot_id: Option<String>,
}

impl Start {
    /// The start of the live process `pid`, to be recorded beside it.
    pub fn of(pid: u32) -> Option<Start> {
        let stat = read_stat(pid).ok()?;
        Some(Start {
            ticks: stat.start,
            boot_id: boot_id().map(str::to_owned),
        })
    }
}

/// What is known of a process besides its pid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Its start was recorded: exactly that process.
    Recorded(Start),
    /// Only that it started near this time (Unix seconds): a process that started well before or
    /// after is another one.
    StartedNear(i64),
    /// Nothing: whatever process has the pid (pid 1 excepted).
    Unchecked,
}

impl Claim {
    fn accepts(&self, start_ticks: u64) -> bool {
        match self {
            Claim::Recorded(s) => {
                let same_boot = match (&s.boot_id, boot_id()) {
                    (Some(recorded), Some(now)) => recorded == now,
                    _ => true,
                };
                s.ticks == start_ticks && same_boot
            }
            Claim::StartedNear(near) => started_unix_secs(start_ticks).is_none_or(|s| {
                s >= (near - NEAR_BEFORE_SECS) as f64 && s <= (near + NEAR_AFTER_SECS) as f64
            }),
            Claim::Unchecked => true,
        }
    }
}

/// The wall-clock time (Unix seconds) at which a process that started `ticks` after boot
/// started: now, less the time since boot, plus the ticks.
fn started_unix_secs(ticks: u64) -> Option<f64> {
    let hz = rustix::param::clock_ticks_per_second();
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_ascii_whitespace()
        .next()?
        .parse()
        .ok()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
    (hz > 0).then(|| now.as_secs_f64() - uptime + ticks as f64 / hz as f64)
}

/// What became of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// Alive, and the process meant.
    Ours,
    /// Alive, but its `/proc` entry cannot be read (another user's, with `/proc` mounted
    /// `hidepid`): it cannot be told apart, so it is taken as the process meant.
    Unverified,
    /// The pid belongs to another process now (pid 1 always does: it is nobody's agent).
    Other,
    /// No such process, or only its zombie.
    Gone,
}

impl Found {
    pub fn is_alive(self) -> bool {
        matches!(self, Found::Ours | Found::Unverified)
    }
}

/// Why a signal was not sent.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error("pid {0} has ended")]
    Gone(u32),
    #[error("pid {0} now belongs to another process, which was left alone")]
    NotOurs(u32),
    #[error("pid {pid}: {source}")]
    Os { pid: u32, source: io::Error },
}

/// A pid, and what tells its process from a later one of the same number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessRef {
    pub pid: u32,
    pub claim: Claim,
}

impl ProcessRef {
    pub fn new(pid: u32, claim: Claim) -> ProcessRef {
        ProcessRef { pid, claim }
    }

    pub fn find(&self) -> Found {
        let Some(p) = raw_pid(self.pid) else {
            return Found::Gone;
        };
        if self.pid == 1 {
            return Found::Other;
        }
        match read_stat(self.pid) {
            Ok(stat) if stat.is_zombie() => Found::Gone,
            Ok(stat) if self.claim.accepts(stat.start) => Found::Ours,
            Ok(_) => Found::Other,
            Err(_) => match test_kill_process(p) {
                Ok(()) | Err(Errno::PERM) => Found::Unverified,
                Err(_) => Found::Gone,
            },
        }
    }

    pub fn is_alive(&self) -> bool {
        self.find().is_alive()
    }

    /// Stopped (SIGSTOP, a terminal's stop, a debugger's trace stop): alive, but acting on no
    /// signal until it is continued (SIGKILL aside).
    pub fn is_stopped(&self) -> bool {
        self.find() == Found::Ours
            && read_stat(self.pid).is_ok_and(|s| matches!(s.state, b'T' | b't'))
    }

    /// Sends `sig` to this process, and only to it.
    pub fn signal(&self, sig: Signal) -> Result<(), SignalError> {
        let p = raw_pid(self.pid).ok_or(SignalError::Gone(self.pid))?;
        // Opened before the check: whatever happens after it, the signal goes to the process the
        // pidfd holds, never to a later holder of the number. Kernels before 5.3 have no pidfd;
        // there the check and `kill` are a few microseconds apart.
        let pidfd = match pidfd_open(p, PidfdFlags::empty()) {
            Ok(fd) => Some(fd),
            Err(Errno::SRCH) => return Err(SignalError::Gone(self.pid)),
            Err(_) => None,
        };
        match self.find() {
            Found::Gone => return Err(SignalError::Gone(self.pid)),
            Found::Other => return Err(SignalError::NotOurs(self.pid)),
            Found::Ours | Found::Unverified => {}
        }
        let sent = match &pidfd {
            Some(fd) => pidfd_send_signal(fd, sig),
            None => kill_process(p, sig),
        };
        sent.map_err(|e| self.os_error(e))
    }

    /// The process group this process started (its group id is its pid). The leader may have
    /// ended while members live on: a number stays taken while a group bears it, so a group of
    /// that number is still this one's, unless the number names another process now.
    pub fn find_group(&self) -> Found {
        let Some(p) = raw_pid(self.pid) else {
            return Found::Gone;
        };
        let leader = self.find();
        if leader == Found::Other {
            return Found::Other;
        }
        match test_kill_process_group(p) {
            // Zombies stay in their group until reaped, and an init that does not reap keeps
            // them for ever: only a member that is not one counts.
            Ok(()) | Err(Errno::PERM) if !has_live_member(self.pid) => Found::Gone,
            Ok(()) | Err(Errno::PERM) if leader == Found::Gone => Found::Ours,
            Ok(()) | Err(Errno::PERM) => leader,
            Err(_) => Found::Gone,
        }
    }

    /// Sends `sig` to the process group this process started, if it is still this one's.
    pub fn signal_group(&self, sig: Signal) -> Result<(), SignalError> {
        let p = raw_pid(self.pid).ok_or(SignalError::Gone(self.pid))?;
        match self.find_group() {
            Found::Gone => Err(SignalError::Gone(self.pid)),
            Found::Other => Err(SignalError::NotOurs(self.pid)),
            Found::Ours | Found::Unverified => {
                kill_process_group(p, sig).map_err(|e| self.os_error(e))
            }
        }
    }

    fn os_error(&self, e: Errno) -> SignalError {
        if e == Errno::SRCH {
            SignalError::Gone(self.pid)
        } else {
            SignalError::Os {
                pid: self.pid,
                source: e.into(),
            }
        }
    }
}

#[cfg(test)]
mod tests;
