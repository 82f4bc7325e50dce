//! A two-host IP lab on one Linux machine, for running kernel TCP (and
//! Broadside over UDP) through the relay's impairment model: two network
//! namespaces, each with one TUN device; the relay reads IP packets from one
//! TUN and writes them to the other ([`crate::relay::Relay::start_tun`]).
//!
//! Needs root, `ip` (iproute2) and `/dev/net/tun`; [`Lab::available`] says
//! why not when they are missing. Only the two addresses given to
//! [`Lab::create`] are configured, on the lab's own TUN devices inside its
//! own namespaces; nothing outside them is touched. Namespaces are deleted
//! when the [`Lab`] drops (also on panic).
//!
//! The system calls std does not wrap come from crates, so that this crate
//! has no `unsafe` of its own: `setns` from `nix`, and the TUN device
//! (`ioctl(TUNSETIFF)`, and `poll` for reads with a timeout) from `tun`.

use crate::NodeError;
use std::fs::File;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// One end of the lab: a namespace and the TUN device inside it.
pub struct Host {
    /// Namespace name (as in `ip netns list`).
    pub netns: String,
    /// TUN device name.
    pub dev: String,
    /// The host's address.
    pub addr: Ipv4Addr,
    tun: Option<Tun>,
}

/// An open TUN device (IP packets, no packet-information header); shared by
/// the relay's two directions, one reading from it and one writing to it.
pub type Tun = Arc<tun::Device>;

impl Host {
    /// Takes the TUN device (once) to hand it to a relay.
    pub fn take_tun(&mut self) -> Option<Tun> {
        self.tun.take()
    }
}

/// Two namespaces joined only through their TUN devices.
pub struct Lab {
    /// Host A.
    pub a: Host,
    /// Host B.
    pub b: Host,
}

fn ip(args: &[&str]) -> Result<(), NodeError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| NodeError::Runtime(format!("cannot run ip {}: {e}", args.join(" "))))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(NodeError::Runtime(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Lab {
    /// Why a lab cannot be built here, or `None` if it can.
    pub fn available() -> Option<String> {
        if !cfg!(target_os = "linux") {
            return Some("network namespaces and TUN need Linux".into());
        }
        if !Path::new("/dev/net/tun").exists() {
            return Some("/dev/net/tun is missing".into());
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return Some("the `ip` command (iproute2) is missing".into());
        }
        // Creating a namespace is the real test of the privileges needed.
        let probe = format!("wsbd-probe-{}", std::process::id());
        match ip(&["netns", "add", &probe]) {
            Ok(()) => {
                let _ = ip(&["netns", "del", &probe]);
                None
            }
            Err(e) => Some(format!(
                "cannot create a network namespace (needs root): {e}"
            )),
        }
    }

    /// Creates namespaces `{prefix}a` and `{prefix}b` with TUN devices
    /// `{prefix}0` (address `a`) and `{prefix}1` (address `b`) in one /24,
    /// MTU `mtu`. `prefix` must be short (device names are at most 15 bytes).
    pub fn create(prefix: &str, a: Ipv4Addr, b: Ipv4Addr, mtu: u32) -> Result<Lab, NodeError> {
        if prefix.len() > 12 || prefix.is_empty() {
            return Err(NodeError::Usage(format!(
                "lab prefix {prefix:?}: 1 to 12 characters"
            )));
        }
        if a.octets()[..3] != b.octets()[..3] || a == b {
            return Err(NodeError::Usage(format!(
                "lab addresses {a} and {b}: need two different addresses in one /24"
            )));
        }
        let host = |ns: &str, dev: &str, addr| Host {
            netns: ns.into(),
            dev: dev.into(),
            addr,
            tun: None,
        };
        // Built before anything is created so that Drop cleans up whatever was.
        let mut lab = Lab {
            a: host(&format!("{prefix}a"), &format!("{prefix}0"), a),
            b: host(&format!("{prefix}b"), &format!("{prefix}1"), b),
        };
        for h in [&mut lab.a, &mut lab.b] {
            // A stale namespace of the same name (a killed earlier run) goes first.
            let _ = ip(&["netns", "del", &h.netns]);
            ip(&["netns", "add", &h.netns])?;
            let ns = h.netns.clone();
            let dev = h.dev.clone();
            let tun = in_netns(&ns, move || open_tun(&dev))??;
            h.tun = Some(tun);
            let cidr = format!("{}/24", h.addr);
            let mtu = mtu.to_string();
            ip(&["-n", &h.netns, "addr", "add", &cidr, "dev", &h.dev])?;
            ip(&["-n", &h.netns, "link", "set", &h.dev, "mtu", &mtu, "up"])?;
            ip(&["-n", &h.netns, "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for h in [&self.a, &self.b] {
            let _ = ip(&["netns", "del", &h.netns]);
        }
    }
}

/// Runs `f` on a new thread that has entered network namespace `netns`
/// (sockets it creates live there, and keep working from any thread), and
/// waits for it.
pub fn in_netns<T: Send + 'static>(
    netns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NodeError> {
    spawn_in_netns(netns, f)?
        .join()
        .map_err(|_| NodeError::Runtime("thread in namespace panicked".into()))?
}

/// Starts `f` on a new thread that has entered network namespace `netns`.
pub fn spawn_in_netns<T: Send + 'static>(
    netns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<Result<T, NodeError>>, NodeError> {
    let path = Path::new("/var/run/netns").join(netns);
    let ns = File::open(&path)
        .map_err(|e| NodeError::Runtime(format!("cannot open {}: {e}", path.display())))?;
    Ok(std::thread::spawn(move || {
        // Affects only the calling thread (a network namespace), which is ours.
        nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| NodeError::Runtime(format!("setns {}: {e}", path.display())))?;
        drop(ns);
        Ok(f())
    }))
}

/// Opens (creating if needed) TUN device `name` in the calling thread's
/// network namespace: IP packets, no packet-info header. Only the device is
/// created: address, MTU and state are left to `ip`.
pub fn open_tun(name: &str) -> Result<Tun, NodeError> {
    // IFNAMSIZ (16) with the terminating NUL.
    if name.len() >= 16 {
        return Err(NodeError::Usage(format!("TUN name {name:?} is too long")));
    }
    let mut cfg = tun::Configuration::default();
    // Linux default: no packet-information header (`IFF_NO_PI`).
    cfg.tun_name(name).layer(tun::Layer::L3);
    tun::create(&cfg)
        .map(Arc::new)
        .map_err(|e| NodeError::Runtime(format!("TUN {name}: {e}")))
}

/// A TUN device as a relay port: IPv4 packets between the two lab
/// addresses only; anything else (IPv6 router solicitations, other
/// addresses) is reported foreign and dropped.
pub(crate) struct TunPort {
    pub(crate) tun: Tun,
    pub(crate) src: Ipv4Addr,
    pub(crate) dst: Ipv4Addr,
}

impl crate::impair::Port for TunPort {
    fn recv(&mut self, buf: &mut [u8], wait: Duration) -> std::io::Result<crate::impair::Recv> {
        use crate::impair::Recv;
        use std::io::ErrorKind::{Interrupted, TimedOut, WouldBlock};
        // A zero wait would not block; the relay's loop wants a short sleep.
        let n = match self
            .tun
            .recv_timeout(buf, wait.max(Duration::from_millis(1)))
        {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), TimedOut | WouldBlock | Interrupted) => {
                return Ok(Recv::Idle)
            }
            Err(e) => return Err(e),
        };
        let p = &buf[..n];
        let ours = n >= 20
            && p[0] >> 4 == 4
            && p[12..16] == self.src.octets()
            && p[16..20] == self.dst.octets();
        Ok(if ours { Recv::Packet(n) } else { Recv::Foreign })
    }

    fn send(&mut self, packet: &[u8]) -> bool {
        self.tun.send(packet).is_ok()
    }
}
