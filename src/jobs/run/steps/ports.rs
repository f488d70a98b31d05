//! A free range of ports for each job (`LUZIA_PORT`, the first of [`COUNT`]), so that the dev
//! servers of jobs running side by side do not take each other's port. Chosen when the job
//! starts, not at dispatch (a queued task may start hours later): a block of [`COUNT`] ports
//! that all can be bound on the loopback now, found from a place the job's id gives, so that
//! jobs starting together begin their search in different places.

use std::net::{Ipv4Addr, TcpListener};

/// Ports a job gets: `LUZIA_PORT` to `LUZIA_PORT + COUNT - 1`.
pub const COUNT: u16 = crate::jobs::model::meta::PORTS_PER_JOB;
/// Where the blocks are: above the registered ports most services use, below the ephemeral
/// range Linux gives outgoing connections (32768 and up).
const FIRST: u16 = 20000;
const BLOCKS: u16 = (32000 - FIRST) / COUNT;
/// Blocks tried before giving up (each costs [`COUNT`] binds, a few microseconds each).
const TRIES: u16 = 64;

/// The first port of a free block for job `id`, `None` when none of the blocks tried was free.
pub fn choose(id: &str) -> Option<u16> {
    let start = fnv(id) % u32::from(BLOCKS);
    (0..TRIES)
        .map(|i| (start + u32::from(i)) % u32::from(BLOCKS))
        .map(|b| FIRST + u16::try_from(b).unwrap_or(0) * COUNT)
        .find(|&first| free(first))
}

fn free(first: u16) -> bool {
    // All bound at once: a port bound by another process fails here.
    let held: Result<Vec<TcpListener>, _> = (first..first + COUNT)
        .map(|p| TcpListener::bind((Ipv4Addr::LOCALHOST, p)))
        .collect();
    held.is_ok()
}

fn fnv(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_with_a_port_in_use_is_passed_over() {
        let first = choose("120000-abcd").unwrap();
        assert!((FIRST..32000).contains(&first) && (first - FIRST).is_multiple_of(COUNT));
        // Taken by someone: the job gets another block.
        let _held = TcpListener::bind((Ipv4Addr::LOCALHOST, first + 3)).unwrap();
        let other = choose("120000-abcd").unwrap();
        assert_ne!(other, first);
        assert!(other + COUNT <= first + 3 || other > first + 3);
        assert_ne!(
            choose("120000-abcd"),
            choose("120001-ffff"),
            "ids spread out"
        );
    }
}
