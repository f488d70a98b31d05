//! When the next frame may be drawn: at most ~30 a second, and while the only change is new
//! lines of the followed output, at most 10 in any second. A stream of lines needs no more, and
//! each such frame resends the whole scrolled pane; an occasional line still shows at once.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub const FRAME_INTERVAL: Duration = Duration::from_millis(33);
pub const LOG_FRAMES_PER_SECOND: usize = 10;
const WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub struct FramePacer {
    last: Option<Instant>,
    /// When the recent output-only frames were drawn (within the last second).
    log_frames: VecDeque<Instant>,
}

impl FramePacer {
    /// The earliest moment the next frame may be drawn.
    pub fn next_allowed(&self, log_only: bool, now: Instant) -> Instant {
        let Some(last) = self.last else {
            return now;
        };
        let mut at = last + FRAME_INTERVAL;
        if log_only && self.log_frames.len() >= LOG_FRAMES_PER_SECOND {
            at = at.max(self.log_frames[self.log_frames.len() - LOG_FRAMES_PER_SECOND] + WINDOW);
        }
        at
    }

    pub fn drawn(&mut self, log_only: bool, now: Instant) {
        self.last = Some(now);
        while self
            .log_frames
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            self.log_frames.pop_front();
        }
        if log_only {
            self.log_frames.push_back(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_only_frames_are_capped_per_second_and_others_are_not() {
        let mut p = FramePacer::default();
        let t0 = Instant::now();
        assert_eq!(
            p.next_allowed(true, t0),
            t0,
            "the first frame is never held"
        );
        for i in 0..LOG_FRAMES_PER_SECOND {
            let t = t0 + Duration::from_millis(50 * i as u64);
            p.drawn(true, t);
        }
        let last = t0 + Duration::from_millis(50 * (LOG_FRAMES_PER_SECOND as u64 - 1));
        assert_eq!(
            p.next_allowed(false, t0),
            last + FRAME_INTERVAL,
            "a real change only waits the frame interval"
        );
        assert_eq!(
            p.next_allowed(true, t0),
            t0 + WINDOW,
            "the 11th output frame in a second waits"
        );
        p.drawn(true, t0 + WINDOW);
        assert!(p.next_allowed(true, t0) >= t0 + WINDOW + Duration::from_millis(50));
    }
}
