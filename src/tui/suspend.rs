//! The cockpit stepping aside for a program that needs the terminal (`luzia attach`, which runs
//! a job's Claude Code session): the input thread is parked so it reads no key meant for the
//! program, the terminal is restored, the program runs to its end, and the cockpit takes the
//! terminal back and draws it whole. The loop waits meanwhile: nothing can be drawn while the
//! program owns the screen, and the events that arrive wait in the channel.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::terminal::{self, Term};
use crate::jobs::JobId;

/// How long the input thread has to let go of the terminal.
const PARK_WAIT: Duration = Duration::from_secs(3);

/// Lets the loop park the input thread between two reads.
#[derive(Clone, Default)]
pub struct InputGate(Arc<(Mutex<Gate>, Condvar)>);

#[derive(Default)]
struct Gate {
    paused: bool,
    parked: bool,
}

impl InputGate {
    /// Called by the input thread before each read: waits here while the cockpit is aside.
    pub fn pass(&self) {
        let (lock, cond) = &*self.0;
        let Ok(mut g) = lock.lock() else { return };
        while g.paused {
            g.parked = true;
            cond.notify_all();
            g = match cond.wait(g) {
                Ok(g) => g,
                Err(_) => return,
            };
        }
        g.parked = false;
    }

    /// Parks the input thread: it is woken from its read by a SIGWINCH (which the terminal
    /// library turns into a resize event) and stops at [`InputGate::pass`]. False if it did
    /// not stop in time.
    fn pause(&self) -> bool {
        let (lock, cond) = &*self.0;
        let Ok(mut g) = lock.lock() else { return false };
        g.paused = true;
        let deadline = Instant::now() + PARK_WAIT;
        while !g.parked {
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::WINCH,
            );
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            g = match cond.wait_timeout(g, left.min(Duration::from_millis(100))) {
                Ok((g, _)) => g,
                Err(_) => return false,
            };
        }
        true
    }

    fn go(&self) {
        let (lock, cond) = &*self.0;
        if let Ok(mut g) = lock.lock() {
            g.paused = false;
            cond.notify_all();
        }
    }
}

/// How to run `luzia attach`: this executable, with the cockpit's jobs root and config.
pub struct Attach<'a> {
    pub root: &'a Path,
    pub config: Option<&'a Path>,
}

impl Attach<'_> {
    /// Runs `luzia attach ID` in the terminal and takes the terminal back. Returns what to say
    /// in the message line.
    pub fn run(&self, term: &mut Term, gate: &InputGate, id: &JobId) -> String {
        if !gate.pause() {
            gate.go();
            return format!(
                "cannot step aside: the cockpit's input did not stop; run `luzia attach {id}` from a shell"
            );
        }
        terminal::restore();
        let said = self.attach(id);
        let back = terminal::resume(term);
        gate.go();
        match back {
            Ok(()) => said,
            Err(e) => format!("{said}; the terminal could not be set up again: {e}"),
        }
    }

    fn attach(&self, id: &JobId) -> String {
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => return format!("cannot find the luzia executable: {e}"),
        };
        let mut cmd = Command::new(exe);
        cmd.arg("--jobs-dir").arg(self.root);
        if let Some(c) = self.config {
            cmd.arg("--config").arg(c);
        }
        cmd.arg("attach").arg(id.as_str());
        match cmd.status() {
            Ok(s) if s.success() => format!("back from the session of {id}"),
            Ok(s) => {
                // Its last words are on the terminal: leave them there until they are read.
                let mut out = std::io::stdout();
                let _ = write!(out, "\r\nluzia: press Enter to return to the cockpit ");
                let _ = out.flush();
                let _ = std::io::stdin().lock().read_line(&mut String::new());
                match s.code() {
                    Some(code) => format!("luzia attach {id} ended with exit {code}"),
                    None => format!("luzia attach {id} was ended by a signal"),
                }
            }
            Err(e) => format!("cannot run luzia attach {id}: {e}"),
        }
    }
}
