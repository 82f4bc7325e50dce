//! pcap output: one capture file per radio, a monitor-mode view at that
//! radio's position. Each `frames` row of a captured node that a monitor
//! interface would have seen becomes one record — every frame it sent, and
//! every frame it received to the end, intact or with a failed FCS
//! (flagged bad, its FCS deliberately wrong). Frames it never locked on
//! (preamble missed, busy, transmitting) or abandoned for a stronger one
//! are not in a capture. A node named as the sniffer records every frame
//! it decodes, not only those addressed to it.
//!
//! Link type 802.11 with radiotap ([`radiotap`]); the frame bytes are
//! built by [`frame`]. A record's timestamp is its row's time after the
//! wall-clock time of run time zero (the scenario's `start`, which the GPS
//! logs `wayside gps` writes share, so that a run's captures and logs keep
//! one clock). Nothing here draws a random number: the same run gives the
//! same bytes.

pub mod frame;
pub mod radiotap;

use crate::ids::NodeId;
use crate::mac::mgmt::Role;
use crate::mac::Frame;
use crate::phy::mode::{Mode, Preamble, Standard};
use crate::trace::{DropReason, PhyEvent};
use crate::units::{Dbm, SimTime};
use frame::{Encoder, Network};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};
use radiotap::{RadioInfo, FLAG_BAD_FCS, FLAG_FCS, FLAG_SHORT_PREAMBLE};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which radios a run captures (the scenario's `[pcap]` section, lowered).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PcapConfig {
    /// The radios that get a capture file; empty: every radio.
    pub nodes: Vec<NodeId>,
    /// A passive node whose trace and capture hold every frame it decodes.
    pub sniffer: Option<NodeId>,
    /// The wall-clock time of run time zero, since the Unix epoch.
    pub start: Duration,
}

/// One radio as a capture sees it.
pub struct CapturedNode {
    pub name: String,
    pub role: Role,
    pub tx_power: Dbm,
    /// Whether it gets a capture file.
    pub captured: bool,
}

/// The radio settings every record shares.
pub struct Air {
    pub standard: Standard,
    pub preamble: Preamble,
    pub noise_floor: Dbm,
    pub beacon_interval: SimTime,
}

/// An error writing a capture, naming the file.
#[derive(Debug)]
pub struct CaptureError(pub String);

/// The open capture files of a run.
pub struct Capture {
    writers: Vec<Option<(PathBuf, PcapWriter<BufWriter<File>>)>>,
    tx_power: Vec<Dbm>,
    encoder: Encoder,
    air: Air,
    buf: Vec<u8>,
    /// The wall-clock time of run time zero ([`PcapConfig::start`]).
    start: Duration,
    /// The first write error; reported by [`Capture::finish`].
    error: Option<CaptureError>,
}

fn header() -> PcapHeader {
    PcapHeader {
        version_major: 2,
        version_minor: 4,
        ts_correction: 0,
        ts_accuracy: 0,
        snaplen: 65535,
        datalink: DataLink::IEEE802_11_RADIOTAP,
        ts_resolution: TsResolution::NanoSecond,
        endianness: Endianness::Little,
    }
}

impl Capture {
    /// Creates `dir` and a `NAME.pcap` in it for each captured node, run
    /// time zero at `start` after the Unix epoch.
    pub fn create(
        dir: &Path,
        nodes: &[CapturedNode],
        air: Air,
        start: Duration,
    ) -> Result<Capture, CaptureError> {
        let err = |p: &Path, e: &dyn std::fmt::Display| {
            CaptureError(format!(
                "pcap: cannot write {}: {e}; give a directory that can be created",
                p.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(|e| err(dir, &e))?;
        let mut writers = Vec::with_capacity(nodes.len());
        for n in nodes {
            writers.push(if n.captured {
                let path = dir.join(format!("{}.pcap", n.name));
                let file = File::create(&path).map_err(|e| err(&path, &e))?;
                let w = PcapWriter::with_header(BufWriter::with_capacity(1 << 20, file), header())
                    .map_err(|e| err(&path, &e))?;
                Some((path, w))
            } else {
                None
            });
        }
        let network = Network {
            roles: nodes.iter().map(|n| n.role).collect(),
            modes: air.standard.modes(),
            basic: air.standard.basic_rates(),
            beacon_interval_tu: (air.beacon_interval.as_ns() as f64 / 1.024e6)
                .round()
                .min(65535.0) as u16,
            short_preamble: air.preamble == Preamble::Short,
        };
        Ok(Capture {
            writers,
            tx_power: nodes.iter().map(|n| n.tx_power).collect(),
            encoder: Encoder::new(network),
            air,
            buf: Vec::new(),
            start,
            error: None,
        })
    }

    /// Records what `node`, tuned to `channel`, did with `frame` at `now`:
    /// the `frames` row (`event`, `reason`, received power) just traced.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        now: SimTime,
        node: NodeId,
        frame: &Frame,
        mode: &Mode,
        channel: u32,
        event: PhyEvent,
        reason: DropReason,
        rssi: Option<Dbm>,
    ) {
        if event == PhyEvent::Tx {
            self.encoder.observe(frame);
        }
        let heard = match (event, reason) {
            (PhyEvent::Tx, _) => None,
            (PhyEvent::Rx, _) | (PhyEvent::Drop, DropReason::Error) => {
                Some(rssi.map_or(f64::NAN, |r| r.0))
            }
            (PhyEvent::Drop, _) => return,
        };
        let Some(Some((path, writer))) = self.writers.get_mut(node.index()) else {
            return;
        };
        let bad_fcs = event == PhyEvent::Drop;
        let tsft_us = now.as_ns() / 1000;
        let freq_mhz = self
            .air
            .standard
            .default_channel_frequency(channel)
            .map_or(0, |f| (f.0 / 1e6).round() as u16);
        let short = self.air.preamble == Preamble::Short
            && mode.class == crate::phy::mode::ModClass::Dsss
            && mode.rate.mbps() > 1.0;
        let flags = FLAG_FCS
            | if bad_fcs { FLAG_BAD_FCS } else { 0 }
            | if short { FLAG_SHORT_PREAMBLE } else { 0 };
        let info = RadioInfo {
            tsft_us,
            flags,
            rate_mbps: mode.rate.mbps(),
            freq_mhz,
            class: mode.class,
            bandwidth_mhz: mode.bandwidth_mhz,
            heard: heard.map(|s| (s, self.air.noise_floor.0)),
            tx_power_dbm: self.tx_power[node.index()].0,
        };
        self.buf.clear();
        info.write(&mut self.buf);
        self.encoder
            .write(frame, channel, tsft_us, bad_fcs, &mut self.buf);
        let ts = self.start + Duration::from_nanos(now.as_ns());
        let packet = PcapPacket::new(ts, self.buf.len() as u32, &self.buf);
        if let Err(e) = writer.write_packet(&packet) {
            self.error.get_or_insert_with(|| {
                CaptureError(format!("pcap: cannot write {}: {e}", path.display()))
            });
        }
    }

    /// Flushes every file; the first error of the run, if any.
    pub fn finish(self) -> Result<Vec<PathBuf>, CaptureError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut paths = Vec::new();
        for (path, w) in self.writers.into_iter().flatten() {
            use std::io::Write;
            w.into_writer()
                .flush()
                .map_err(|e| CaptureError(format!("pcap: cannot write {}: {e}", path.display())))?;
            paths.push(path);
        }
        Ok(paths)
    }
}
