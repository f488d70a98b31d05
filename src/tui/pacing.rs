//! When the next frame may be drawn: at most ~30 a second for what the operator does, and a
//! frame whose only change is new lines of the followed output within a frame budget of the
//! line's arrival: at once when the last frame is older than the budget, else the budget after
//! it, so that a burst of lines is drawn as one frame. Such frames are cheap on the wire: the
//! backend scrolls the pane's rows on the terminal and sends only the new lines
//! (`terminal::backend`). Output that floods in (a pane's worth of lines at a time) is drawn
//! ten times a second: lines scrolling by faster are read by no one, and each frame costs the
//! whole screen's rendering.

use std::time::{Duration, Instant};

pub const FRAME_INTERVAL: Duration = Duration::from_millis(33);
/// The longest a new line of followed output waits for its frame (one 60 Hz refresh).
pub const OUTPUT_FRAME_BUDGET: Duration = Duration::from_millis(16);
/// Frames of flooding output only, at most this often.
pub const FLOOD_FRAME_INTERVAL: Duration = Duration::from_millis(100);

/// What changed since the last frame, for its pacing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Only new lines of the followed output.
    Output,
    /// Only new lines of the followed output, arriving in a flood.
    Flood,
    /// Anything else.
    Change,
}

#[derive(Debug, Default)]
pub struct FramePacer {
    last: Option<Instant>,
}

impl FramePacer {
    /// The earliest moment the next frame may be drawn (`now` when it may be drawn at once).
    pub fn next_allowed(&self, pace: Pace, now: Instant) -> Instant {
        let gap = match pace {
            Pace::Output => OUTPUT_FRAME_BUDGET,
            Pace::Flood => FLOOD_FRAME_INTERVAL,
            Pace::Change => FRAME_INTERVAL,
        };
        self.last.map_or(now, |l| l + gap)
    }

    pub fn drawn(&mut self, now: Instant) {
        self.last = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_only_frames_come_within_the_budget_and_others_at_the_interval() {
        let mut p = FramePacer::default();
        let t0 = Instant::now();
        assert_eq!(
            p.next_allowed(Pace::Output, t0),
            t0,
            "the first frame is never held"
        );
        p.drawn(t0);
        assert_eq!(
            p.next_allowed(Pace::Change, t0),
            t0 + FRAME_INTERVAL,
            "a real change waits the frame interval"
        );
        assert_eq!(
            p.next_allowed(Pace::Output, t0),
            t0 + OUTPUT_FRAME_BUDGET,
            "more output within the budget: lines arriving meanwhile share that frame"
        );
        assert_eq!(
            p.next_allowed(Pace::Flood, t0),
            t0 + FLOOD_FRAME_INTERVAL,
            "a flood is drawn ten times a second"
        );
        // A line after a quiet spell is drawn at once.
        let later = t0 + Duration::from_secs(2);
        assert!(p.next_allowed(Pace::Output, later) <= later);
        // Any frame drawn restarts the budget.
        p.drawn(t0 + Duration::from_millis(50));
        assert_eq!(
            p.next_allowed(Pace::Output, t0),
            t0 + Duration::from_millis(50) + OUTPUT_FRAME_BUDGET
        );
    }
}
