//! The real-time loop. Like ns-3's real-time scheduler in best-effort
//! mode, it runs each event when the wall clock reaches the event's time
//! (scenario time zero is the loop's start) and, when it is behind, runs
//! events back to back until it catches up; unlike it, it never drops or
//! aborts, and it measures how late every event ran. Between events it
//! waits on the hosts' TUN devices, so a packet from a real host enters
//! the simulation at the wall-clock time it was read, clamped between the
//! last event run and the next one so that simulated time never goes
//! back. Packets that reach a hosted node leave for its host at once.

use crate::device::Device;
use crate::lateness::{Lateness, LatenessSummary};
use crate::Error;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::time::TimeSpec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wayside_sim::units::SimTime;
use wayside_sim::world::World;

/// The longest a packet on a TUN device can be (its MTU is smaller).
const MAX_PACKET: usize = 65_535;
/// While behind, the devices are read every this many events anyway, so
/// that the hosts are not shut out for as long as the simulation lags.
const READ_EVERY: u32 = 64;
/// How long one wait lasts at most, so that a stop is seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(100);

/// Packets in and out of the real hosts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// Read from hosts and handed to their nodes.
    pub from_hosts: u64,
    /// Read from hosts and refused (not IPv4, or to no node).
    pub refused: u64,
    /// Written to hosts.
    pub to_hosts: u64,
    /// For a node without a host, or lost on a full device queue.
    pub undelivered: u64,
    /// Largest lag of a packet read from a host: from the wall-clock time
    /// it was read to the simulated time it entered at.
    pub max_entry_lag: SimTime,
}

/// What the loop leaves.
pub struct PacedRun {
    pub world: World,
    pub lateness: LatenessSummary,
    pub counters: Counters,
    pub stopped_at: Option<SimTime>,
}

/// Runs `world` to its end (or until `stop`) against the wall clock.
pub fn run(
    mut world: World,
    devices: &[Device],
    tolerance: SimTime,
    stop: &Arc<AtomicBool>,
) -> Result<PacedRun, Error> {
    // Wake-ups as exact as the kernel allows (the default slack is 50 µs).
    let _ = nix::sys::prctl::set_timerslack(1);
    let mut late = Lateness::new(tolerance);
    let mut counters = Counters::default();
    let mut buf = vec![0u8; MAX_PACKET];
    let mut refused_told = false;
    let mut since_read = 0u32;
    let origin = Instant::now();
    let wall = || SimTime::from_ns(origin.elapsed().as_nanos() as u64);
    let end = world.duration();
    let mut stopped_at = None;
    loop {
        if stop.load(Ordering::Relaxed) {
            stopped_at = Some(world.now());
            break;
        }
        let next = world.next_time();
        let now = wall();
        match next {
            Some(t) if t <= now => {
                late.record(t, now - t);
                world.step();
                deliver(&mut world, devices, &mut counters)?;
                since_read += 1;
                if since_read < READ_EVERY {
                    continue;
                }
            }
            None if now >= end => break,
            _ => {
                let until = next.unwrap_or(end);
                let wait = Duration::from_nanos((until - now).as_ns()).min(MAX_WAIT);
                wait_readable(devices, wait)?;
            }
        }
        since_read = 0;
        let next = world.next_time().unwrap_or(end);
        for d in devices {
            while let Some(n) = d.read(&mut buf)? {
                let read = wall();
                let at = read.max(world.now()).min(next);
                counters.max_entry_lag = counters.max_entry_lag.max(read.saturating_sub(at));
                match world.inject(at, d.node, Arc::from(&buf[..n])) {
                    Ok(()) => counters.from_hosts += 1,
                    Err(why) => {
                        counters.refused += 1;
                        if !refused_told {
                            refused_told = true;
                            eprintln!(
                                "note: a packet from the host in {:?} was refused ({why}); \
                                 such packets are counted, not reported again",
                                d.netns
                            );
                        }
                    }
                }
                deliver(&mut world, devices, &mut counters)?;
            }
        }
    }
    Ok(PacedRun {
        world,
        lateness: late.summary(),
        counters,
        stopped_at,
    })
}

/// Writes the packets that reached hosted nodes to their hosts.
fn deliver(world: &mut World, devices: &[Device], c: &mut Counters) -> Result<(), Error> {
    for (node, bytes) in world.take_for_hosts() {
        match devices.iter().find(|d| d.node == node) {
            Some(d) if d.write(&bytes)? => c.to_hosts += 1,
            _ => c.undelivered += 1,
        }
    }
    Ok(())
}

/// Waits until a device has a packet or `wait` has passed.
fn wait_readable(devices: &[Device], wait: Duration) -> Result<(), Error> {
    let mut fds: Vec<PollFd> = devices
        .iter()
        .map(|d| PollFd::new(d.fd(), PollFlags::POLLIN))
        .collect();
    match ppoll(&mut fds, Some(TimeSpec::from_duration(wait)), None) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
        Err(e) => Err(Error::Io(e.into())),
    }
}
