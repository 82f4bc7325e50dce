//! A hosted node's TUN device: opened inside the host's network namespace
//! (this thread enters it, opens the device, and returns), then read and
//! written without blocking from the emulator's thread. The device and
//! its address are made beforehand (`wayside emulate-setup`); this only
//! attaches to them.

use crate::Error;
use nix::errno::Errno;
use nix::net::if_::if_nametoindex;
use nix::sched::{setns, CloneFlags};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;
use wayside_sim::ids::NodeId;

/// Where `ip netns add` keeps its namespaces.
const NETNS_DIR: &str = "/var/run/netns";

/// A real host's TUN device, attached to its node.
pub struct Device {
    pub node: NodeId,
    pub netns: String,
    tun: tun::Device,
}

impl Device {
    /// Attaches to TUN device `name` in namespace `netns` for `node`.
    pub fn open(node: NodeId, netns: &str, name: &str) -> Result<Device, Error> {
        if !Path::new("/dev/net/tun").exists() {
            return Err(Error::NoTun);
        }
        let home = File::open("/proc/self/ns/net").map_err(Error::Io)?;
        let target = File::open(Path::new(NETNS_DIR).join(netns))
            .map_err(|_| Error::NoNamespace(netns.to_string()))?;
        setns(target.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|e| match e {
            Errno::EPERM => Error::NotRoot,
            e => Error::Io(e.into()),
        })?;
        let opened = attach(netns, name);
        setns(home.as_fd(), CloneFlags::CLONE_NEWNET)
            .expect("returning to the namespace this thread came from");
        let tun = opened?;
        tun.set_nonblock().map_err(Error::Io)?;
        Ok(Device {
            node,
            netns: netns.to_string(),
            tun,
        })
    }

    /// Reads one packet into `buf`; `None` when none is waiting.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match self.tun.recv(buf) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes one packet to the host; `false` if the device's queue is
    /// full (the packet is lost, as a full interface queue loses it).
    pub fn write(&self, packet: &[u8]) -> io::Result<bool> {
        match self.tun.send(packet) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the descriptor lives as long as `self.tun`, which the
        // borrow ties it to.
        unsafe { BorrowedFd::borrow_raw(self.tun.as_raw_fd()) }
    }
}

/// In the host's namespace: attaches to the existing device `name`.
fn attach(netns: &str, name: &str) -> Result<tun::Device, Error> {
    let missing = || Error::NoDevice {
        netns: netns.to_string(),
        device: name.to_string(),
    };
    // Opening a name that does not exist would make a new device without
    // the host's address: refuse instead.
    if if_nametoindex(name).is_err() {
        return Err(missing());
    }
    let mut cfg = tun::Configuration::default();
    cfg.tun_name(name).layer(tun::Layer::L3).up();
    tun::create(&cfg).map_err(|e| match e {
        tun::Error::Io(e) if e.raw_os_error() == Some(Errno::EPERM as i32) => Error::NotRoot,
        tun::Error::Io(e) if e.raw_os_error() == Some(Errno::EINVAL as i32) => missing(),
        e => Error::Io(io::Error::other(e.to_string())),
    })
}
