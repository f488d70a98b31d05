//! Snapshots of what a first use meets: the header with an alarm, messages longer than the
//! line, the diff view of a snapshot job, the read-only inbox, the empty cockpit.

use super::tests::{draw, snapshot};
use crate::tui::testing::*;

/// The first `n` lines of a screen.
fn top(screen: &str, n: usize) -> String {
    screen.lines().take(n).collect::<Vec<_>>().join("\n")
}

#[test]
fn an_alarm_leaves_the_header_full_where_it_fits() {
    for (w, h) in [(80, 24), (160, 45)] {
        let app = app(w, h);
        assert!(!app.insight.alarms.is_empty(), "the fixtures raise alarms");
        let header = top(&draw(&app), 1);
        insta::assert_snapshot!(format!("alarm_header_{w}x{h}"), header);
        if w >= 160 {
            // The long labels and the alarms' words: only the root is shortened.
            assert!(header.contains("2 running"), "{header}");
            assert!(header.contains("1 over budget"), "{header}");
        }
    }
}
