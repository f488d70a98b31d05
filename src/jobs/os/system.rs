//! The server the agents share: memory and load, read from /proc (a root is passed in, so tests
//! give a fake one). Alerts when memory is nearly gone or there are more runnable processes than
//! cores, the two reasons a fleet of agents suddenly slows down or dies.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Memory and load as /proc tells them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SystemLoad {
    pub mem_total_kib: u64,
    pub mem_available_kib: u64,
    /// The one-minute load average.
    pub load1: f64,
    pub cores: usize,
}

impl SystemLoad {
    pub fn memory_used_percent(&self) -> f64 {
        if self.mem_total_kib == 0 {
            return 0.0;
        }
        let used = self.mem_total_kib.saturating_sub(self.mem_available_kib);
        used as f64 / self.mem_total_kib as f64 * 100.0
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum SystemAlert {
    Memory { used_percent: f64 },
    Load { load1: f64, cores: usize },
}

impl fmt::Display for SystemAlert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SystemAlert::Memory { used_percent } => write!(f, "memory {used_percent:.0}% used"),
            SystemAlert::Load { load1, cores } => write!(f, "load {load1:.2} on {cores} cores"),
        }
    }
}

/// Why memory and load could not be read. Clone and comparable, like the report that holds it:
/// the `io::Error` is shared.
#[derive(Clone, Debug, thiserror::Error)]
pub enum SystemError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: Arc<std::io::Error>,
    },
    #[error("{} does not say {what}", path.display())]
    Missing { path: PathBuf, what: &'static str },
}

impl PartialEq for SystemError {
    fn eq(&self, other: &SystemError) -> bool {
        match (self, other) {
            (SystemError::Read { path, source }, SystemError::Read { path: p, source: s }) => {
                path == p && source.kind() == s.kind()
            }
            (SystemError::Missing { path, what }, SystemError::Missing { path: p, what: w }) => {
                path == p && what == w
            }
            _ => false,
        }
    }
}

/// Reads `<proc>/meminfo`, `<proc>/loadavg` and `<proc>/stat`. The error names the file.
pub fn read(proc_root: &Path) -> Result<SystemLoad, SystemError> {
    let file = |name: &str| {
        let path = proc_root.join(name);
        std::fs::read_to_string(&path).map_err(|e| SystemError::Read {
            path,
            source: Arc::new(e),
        })
    };
    let meminfo = file("meminfo")?;
    let field = |key: &str| {
        meminfo.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    let bad = |name: &str, what: &'static str| SystemError::Missing {
        path: proc_root.join(name),
        what,
    };
    let mem_total_kib = field("MemTotal").ok_or_else(|| bad("meminfo", "MemTotal"))?;
    // Kernels before 3.14 have no MemAvailable: free + page cache is what it estimates.
    let mem_available_kib = field("MemAvailable")
        .or_else(|| Some(field("MemFree")? + field("Cached").unwrap_or(0)))
        .ok_or_else(|| bad("meminfo", "MemAvailable or MemFree"))?;
    let load1 = file("loadavg")?
        .split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| bad("loadavg", "a load average"))?;
    let cores = file("stat")?
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
        .max(1);
    Ok(SystemLoad {
        mem_total_kib,
        mem_available_kib,
        load1,
        cores,
    })
}

/// The alerts `load` raises: memory above `memory_percent`, load above the number of cores.
pub fn alerts(load: &SystemLoad, memory_percent: u8) -> Vec<SystemAlert> {
    let mut out = Vec::new();
    let used = load.memory_used_percent();
    if used > f64::from(memory_percent) {
        out.push(SystemAlert::Memory { used_percent: used });
    }
    if load.load1 > load.cores as f64 {
        out.push(SystemAlert::Load {
            load1: load.load1,
            cores: load.cores,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(meminfo: &str, loadavg: &str, cpus: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("meminfo"), meminfo).unwrap();
        std::fs::write(dir.path().join("loadavg"), loadavg).unwrap();
        let mut stat = String::from("cpu  100 0 100 1000 0 0 0 0 0 0\n");
        for i in 0..cpus {
            stat.push_str(&format!("cpu{i} 50 0 50 500 0 0 0 0 0 0\n"));
        }
        stat.push_str("intr 12345\nctxt 999\ncpufreq 1\n");
        std::fs::write(dir.path().join("stat"), stat).unwrap();
        dir
    }

    const MEM_OK: &str = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\nCached: 100 kB\n";
    const MEM_TIGHT: &str =
        "MemTotal:       16000000 kB\nMemFree:          200000 kB\nMemAvailable:    1600000 kB\n";

    #[test]
    fn a_quiet_server_raises_nothing() {
        let proc = fake_proc(MEM_OK, "0.52 0.40 0.33 1/234 5678\n", 4);
        let load = read(proc.path()).unwrap();
        assert_eq!(load.cores, 4);
        assert_eq!(load.memory_used_percent(), 50.0);
        assert!(alerts(&load, 80).is_empty());
    }

    #[test]
    fn memory_above_80_percent_and_load_above_the_cores_alert() {
        let proc = fake_proc(MEM_TIGHT, "4.01 3.00 2.00 9/234 5678\n", 4);
        let load = read(proc.path()).unwrap();
        let found = alerts(&load, 80);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].to_string(), "memory 90% used");
        assert_eq!(found[1].to_string(), "load 4.01 on 4 cores");
        // Exactly at the limit is not above it.
        let proc = fake_proc(MEM_OK, "4.00 3.00 2.00 9/234 5678\n", 4);
        assert!(alerts(&read(proc.path()).unwrap(), 50).is_empty());
    }

    #[test]
    fn an_old_kernel_without_memavailable_is_estimated() {
        let proc = fake_proc(
            "MemTotal: 1000 kB\nMemFree: 100 kB\nCached: 50 kB\n",
            "0.1 0.1 0.1 1/1 1\n",
            1,
        );
        let load = read(proc.path()).unwrap();
        assert_eq!(load.mem_available_kib, 150);
        assert_eq!(alerts(&load, 80).len(), 1);
    }

    #[test]
    fn unreadable_or_garbled_files_are_named() {
        let proc = fake_proc("nonsense\n", "x\n", 1);
        let e = read(proc.path()).unwrap_err().to_string();
        assert!(e.contains("meminfo") && e.contains("MemTotal"), "{e}");
        let proc = fake_proc(MEM_OK, "not a number\n", 1);
        let e = read(proc.path()).unwrap_err().to_string();
        assert!(e.contains("loadavg"), "{e}");
        let err = read(Path::new("/nonexistent/proc")).unwrap_err();
        assert!(
            matches!(&err, SystemError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "the io::Error is kept: {err:?}"
        );
        let e = err.to_string();
        assert!(e.contains("/nonexistent/proc/meminfo"), "{e}");
    }

    #[test]
    fn the_real_proc_reads() {
        let load = read(Path::new("/proc")).unwrap();
        assert!(load.cores >= 1 && load.mem_total_kib > 0);
    }
}
