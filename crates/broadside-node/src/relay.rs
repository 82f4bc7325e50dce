//! A seeded lossy relay between two nodes, for experiments. The impairment
//! (random or Gilbert–Elliott loss, a fixed delay, a bandwidth limit with a
//! drop-tail queue, a link up/down schedule such as a single 20-second
//! contact) is [`crate::impair`]'s model, shared by both kinds of relay:
//!
//! - [`Relay::start`]: UDP datagrams between two endpoints on loopback. Node A
//!   sends to `listen_a`; the relay forwards to B from `listen_b`, so B sees
//!   `listen_b` as A's address and replies there, which goes back to A from
//!   `listen_a`. Only packets from the configured node addresses are relayed.
//!   Every address must be in 127.0.0.0/8: the relay never sends anywhere else.
//! - [`Relay::start_tun`] (Linux): IP packets between two TUN devices of a
//!   [`crate::netlab::Lab`], so kernel TCP runs through the same impairment.

use crate::impair::{forward, Link, Port, Recv};
pub use crate::impair::{DirectionStats, Impairment, LossModel, Schedule};
use crate::node::bind_udp;
use crate::NodeError;
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// UDP relay settings.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Where node A sends.
    pub listen_a: SocketAddr,
    /// Where node B sends.
    pub listen_b: SocketAddr,
    /// Node A.
    pub a: SocketAddr,
    /// Node B.
    pub b: SocketAddr,
    /// What the link does to packets.
    pub impairment: Impairment,
}

/// Counts for both directions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// A → B.
    pub a_to_b: DirectionStats,
    /// B → A.
    pub b_to_a: DirectionStats,
}

/// A running relay; stops when dropped or on [`Relay::stop`].
pub struct Relay {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    stats: [Arc<Mutex<DirectionStats>>; 2],
}

fn check_loopback(what: &str, a: SocketAddr) -> Result<(), NodeError> {
    match a.ip() {
        IpAddr::V4(v4) if v4.octets()[0] == 127 => Ok(()),
        _ => Err(NodeError::Usage(format!(
            "{what} {a} is not a loopback address; the relay only uses 127.0.0.0/8"
        ))),
    }
}

/// A UDP socket as a relay port: receives from one node, sends to the other.
struct UdpPort {
    socket: UdpSocket,
    from_node: SocketAddr,
    to_node: SocketAddr,
}

impl Port for UdpPort {
    fn recv(&mut self, buf: &mut [u8], wait: Duration) -> std::io::Result<Recv> {
        self.socket.set_read_timeout(Some(wait))?;
        match self.socket.recv_from(buf) {
            Ok((n, src)) if src == self.from_node => Ok(Recv::Packet(n)),
            Ok(_) => Ok(Recv::Foreign),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock
                        | ErrorKind::TimedOut
                        | ErrorKind::Interrupted
                        | ErrorKind::ConnectionRefused
                ) =>
            {
                Ok(Recv::Idle)
            }
            Err(e) => Err(e),
        }
    }

    fn send(&mut self, packet: &[u8]) -> bool {
        self.socket.send_to(packet, self.to_node).is_ok()
    }
}

impl Relay {
    /// Binds both UDP ports and starts forwarding.
    pub fn start(cfg: RelayConfig) -> Result<Relay, NodeError> {
        for (w, a) in [
            ("listen_a", cfg.listen_a),
            ("listen_b", cfg.listen_b),
            ("node a", cfg.a),
            ("node b", cfg.b),
        ] {
            check_loopback(w, a)?;
        }
        cfg.impairment.check()?;
        let (sa, sb) = (
            bind_udp(cfg.listen_a, 8 << 20)?,
            bind_udp(cfg.listen_b, 8 << 20)?,
        );
        let clone = |s: &UdpSocket| s.try_clone().map_err(|e| NodeError::Runtime(e.to_string()));
        let port = |socket, from_node, to_node| UdpPort {
            socket,
            from_node,
            to_node,
        };
        // A→B: receive on listen_a from A, send from listen_b to B; and back.
        let a_to_b = (
            port(clone(&sa)?, cfg.a, cfg.b),
            port(clone(&sb)?, cfg.a, cfg.b),
        );
        let b_to_a = (port(sb, cfg.b, cfg.a), port(sa, cfg.b, cfg.a));
        Ok(Relay::spawn(&cfg.impairment, a_to_b, b_to_a))
    }

    /// Relays IP packets between the TUN devices of a lab's two hosts
    /// (taken from them), with the same impairment model.
    #[cfg(target_os = "linux")]
    pub fn start_tun(
        lab: &mut crate::netlab::Lab,
        impairment: &Impairment,
    ) -> Result<Relay, NodeError> {
        use crate::netlab::TunPort;
        impairment.check()?;
        let (a, b) = (lab.a.addr, lab.b.addr);
        let taken = |h: &mut crate::netlab::Host| {
            h.take_tun()
                .ok_or_else(|| NodeError::Usage(format!("TUN of {} already in use", h.dev)))
        };
        let (ta, tb) = (taken(&mut lab.a)?, taken(&mut lab.b)?);
        let port = |tun, src, dst| TunPort { tun, src, dst };
        let a_to_b = (port(ta.clone(), a, b), port(tb.clone(), a, b));
        let b_to_a = (port(tb, b, a), port(ta, b, a));
        Ok(Relay::spawn(impairment, a_to_b, b_to_a))
    }

    fn spawn<P: Port + 'static>(imp: &Impairment, a_to_b: (P, P), b_to_a: (P, P)) -> Relay {
        let stop = Arc::new(AtomicBool::new(false));
        let stats: [Arc<Mutex<DirectionStats>>; 2] = Default::default();
        let start = Instant::now();
        let mut threads = Vec::new();
        for (i, (rx, tx)) in [a_to_b, b_to_a].into_iter().enumerate() {
            let link = Link::new(imp, i as u64);
            let (stop, stats) = (stop.clone(), stats[i].clone());
            threads.push(std::thread::spawn(move || {
                forward(rx, tx, link, start, &stop, &stats)
            }));
        }
        Relay {
            stop,
            threads,
            stats,
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> RelayStats {
        let get = |s: &Mutex<DirectionStats>| s.lock().map(|s| *s).unwrap_or_default();
        RelayStats {
            a_to_b: get(&self.stats[0]),
            b_to_a: get(&self.stats[1]),
        }
    }

    /// Stops forwarding and returns the final counts.
    pub fn stop(mut self) -> RelayStats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free_addr() -> SocketAddr {
        UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn refuses_non_loopback_addresses() {
        let cfg = RelayConfig {
            listen_a: "127.0.0.1:0".parse().unwrap(),
            listen_b: "127.0.0.1:0".parse().unwrap(),
            a: "127.0.0.1:9".parse().unwrap(),
            b: "192.0.2.1:9".parse().unwrap(),
            impairment: Impairment {
                loss: LossModel::Random(0.0),
                delay: Duration::ZERO,
                ..Impairment::none(1)
            },
        };
        let e = Relay::start(cfg).err().unwrap().to_string();
        assert!(
            e.contains("192.0.2.1:9") && e.contains("127.0.0.0/8"),
            "{e}"
        );
    }

    #[test]
    fn schedule_parses_and_gates() {
        let s = Schedule::parse("2-22, 30-31").unwrap();
        assert!(
            !s.is_up(Duration::from_secs(1))
                && s.is_up(Duration::from_secs(2))
                && !s.is_up(Duration::from_secs(22))
        );
        assert!(Schedule::parse("5-1").is_err() && Schedule::parse("x").is_err());
    }

    #[test]
    fn random_loss_rate_is_close_to_configured_and_seeded() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (a, b) = (
            bind_udp(any, 8 << 20).unwrap(),
            bind_udp(any, 8 << 20).unwrap(),
        );
        let (la, lb) = (free_addr(), free_addr());
        let cfg = RelayConfig {
            listen_a: la,
            listen_b: lb,
            a: a.local_addr().unwrap(),
            b: b.local_addr().unwrap(),
            impairment: Impairment {
                loss: LossModel::Random(0.3),
                delay: Duration::from_millis(1),
                ..Impairment::none(42)
            },
        };
        let relay = Relay::start(cfg).unwrap();
        for i in 0..2000u32 {
            a.send_to(&i.to_be_bytes(), la).unwrap();
            if i % 50 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        b.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut got = 0;
        let mut buf = [0u8; 16];
        while let Ok((_, src)) = b.recv_from(&mut buf) {
            assert_eq!(src, lb, "B sees A as the relay's B-side port");
            got += 1;
        }
        let s = relay.stop();
        assert_eq!(s.a_to_b.received, 2000);
        assert_eq!(s.a_to_b.lost + s.a_to_b.forwarded, 2000);
        assert_eq!(got, s.a_to_b.forwarded);
        let rate = s.a_to_b.lost as f64 / 2000.0;
        assert!((0.26..0.34).contains(&rate), "loss {rate}");
    }

    #[test]
    fn gilbert_elliott_through_the_relay_drops_exactly_the_models_draws() {
        let model = LossModel::GilbertElliott {
            p_gb: 0.05,
            p_bg: 0.25,
            loss_good: 0.01,
            loss_bad: 0.9,
        };
        let imp = Impairment {
            loss: model,
            ..Impairment::none(9)
        };
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (a, b) = (
            bind_udp(any, 8 << 20).unwrap(),
            bind_udp(any, 8 << 20).unwrap(),
        );
        let (la, lb) = (free_addr(), free_addr());
        let relay = Relay::start(RelayConfig {
            listen_a: la,
            listen_b: lb,
            a: a.local_addr().unwrap(),
            b: b.local_addr().unwrap(),
            impairment: imp.clone(),
        })
        .unwrap();
        let n = 4000u32;
        for i in 0..n {
            a.send_to(&i.to_be_bytes(), la).unwrap();
            if i % 50 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        b.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut delivered = vec![false; n as usize];
        let mut buf = [0u8; 16];
        while let Ok((len, _)) = b.recv_from(&mut buf) {
            assert_eq!(len, 4);
            delivered[u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize] = true;
        }
        let s = relay.stop();
        assert_eq!(s.a_to_b.received, u64::from(n));
        // The relay's drops are the seeded model's draws, packet for packet.
        let mut link = crate::impair::Link::new(&imp, 0);
        let want: Vec<bool> = (0..n).map(|_| !link.draw_loss()).collect();
        assert_eq!(delivered, want);
        // And they are bursty as the model says (loose: 4000 packets only).
        let lost = delivered.iter().filter(|d| !**d).count() as f64;
        let bursts = (0..n as usize)
            .filter(|&i| !delivered[i] && (i == 0 || delivered[i - 1]))
            .count() as f64;
        let (rate, burst) = (lost / f64::from(n), lost / bursts);
        assert!((rate - model.loss_rate()).abs() < 0.04, "loss {rate}");
        assert!(
            (burst / model.mean_burst() - 1.0).abs() < 0.25,
            "burst {burst}"
        );
    }
}
