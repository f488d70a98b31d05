//! When the next frame may be drawn: at most ~30 a second, and frames whose only change is new
//! lines of the followed output at least 110 ms apart. A line after a quiet spell shows at once;
//! a stream of lines is batched to about 9 frames a second, since each such frame resends the
//! whole scrolled pane.

use std::time::{Duration, Instant};

pub const FRAME_INTERVAL: Duration = Duration::from_millis(33);
pub const OUTPUT_FRAME_SPACING: Duration = Duration::from_millis(110);

#[derive(Debug, Default)]
pub struct FramePacer {
    last: Option<Instant>,
    last_output_only: Option<Instant>,
}

impl FramePacer {
    /// The earliest moment the next frame may be drawn (`now` when it may be drawn at once).
    pub fn next_allowed(&self, output_only: bool, now: Instant) -> Instant {
        let mut at = self.last.map_or(now, |l| l + FRAME_INTERVAL);
        if output_only && let Some(l) = self.last_output_only {
            at = at.max(l + OUTPUT_FRAME_SPACING);
        }
        at
    }

    pub fn drawn(&mut self, output_only: bool, now: Instant) {
        self.last = Some(now);
        if output_only {
            self.last_output_only = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_only_frames_are_spaced_and_others_are_not() {
        let mut p = FramePacer::default();
        let t0 = Instant::now();
        assert_eq!(
            p.next_allowed(true, t0),
            t0,
            "the first frame is never held"
        );
        p.drawn(true, t0);
        assert_eq!(
            p.next_allowed(false, t0),
            t0 + FRAME_INTERVAL,
            "a real change waits only the frame interval"
        );
        assert_eq!(
            p.next_allowed(true, t0),
            t0 + OUTPUT_FRAME_SPACING,
            "more output waits for the spacing"
        );
        // A line after a quiet spell is drawn at once.
        let later = t0 + Duration::from_secs(2);
        assert!(p.next_allowed(true, later) <= later);
        // A real change in between does not delay the next output frame beyond the spacing.
        p.drawn(false, t0 + Duration::from_millis(50));
        assert_eq!(p.next_allowed(true, t0), t0 + OUTPUT_FRAME_SPACING);
    }
}
