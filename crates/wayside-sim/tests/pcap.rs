//! pcap output against the trace: one record per captured `frames` row,
//! with the row's time, rate, signal, length, sequence number and retry
//! bit, a correct FCS unless the row is a failed FCS; byte-identical files
//! for the same seed; a sniffer that leaves every other node's trace as it
//! was. (`tests/python/test_pcap_out.py` checks the dissection with tshark.)

use pcap_file::pcap::PcapReader;
use pcap_file::DataLink;
use std::fs::File;
use std::path::PathBuf;
use wayside_sim::trace::{DropReason, PhyEvent};
use wayside_sim::{run_scenario, run_scenario_pcap, RunOutput};

/// An AP, a car passing it with a TCP download, and a sniffer by the road.
const PASS: &str = r#"
duration = "40 s"
[environment]
path_loss = "log-distance"
path_loss_exponent = 3.0
shadowing_sigma = "4 dB"
fading = "rayleigh"
noise_floor = "-95 dBm"
[radio]
standard = "802.11g"
channel = 6
[mac]
rts_threshold = "1000 B"
rate_control = { algorithm = "samplerate", preset = "default" }
[management]
beacon_interval = "100 ms"
[[node]]
name = "ap"
role = "ap"
position = [0, 10]
tx_power = "19 dBm"
[[node]]
name = "car"
role = "sta"
position = [-400, 0]
tx_power = "15 dBm"
mobility = { model = "line", speed = "80 km/h", heading = 0 }
[[node]]
name = "sniffer"
position = [30, -5]
[[app]]
kind = "tcp-bulk"
from = "ap"
to = "car"
start = "on-association"
[pcap]
sniffer = "sniffer"
"#;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wayside-pcap-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run_pcap(text: &str, tag: &str) -> (RunOutput, PathBuf) {
    let d = dir(tag);
    let out = run_scenario_pcap(text, &[], Some(3), 0, Some(&d)).unwrap();
    (out, d)
}

/// (time ns since the Unix epoch, radiotap header, MPDU with FCS) of every
/// record.
fn records(path: &PathBuf) -> Vec<(u64, Vec<u8>, Vec<u8>)> {
    let mut r = PcapReader::new(File::open(path).unwrap()).unwrap();
    assert_eq!(r.header().datalink, DataLink::IEEE802_11_RADIOTAP);
    let mut v = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        let d = p.data.to_vec();
        let len = u16::from_le_bytes([d[2], d[3]]) as usize;
        let ts = p.timestamp.as_nanos() as u64;
        v.push((ts, d[..len].to_vec(), d[len..].to_vec()));
    }
    v
}

#[test]
fn test_timestamps_count_from_the_scenario_start() {
    // By default run time zero is the Unix epoch: a record's timestamp is
    // its row's time; `start` moves every record by the same amount.
    let (_, d) = run_pcap(PASS, "start-default");
    let plain = records(&d.join("ap.pcap"));
    assert!(!plain.is_empty() && plain.iter().all(|r| r.0 <= 40_000_000_000));
    let dated = format!("start = \"2006-08-15T12:00:00.5Z\"\n{PASS}");
    let (_, d) = run_pcap(&dated, "start-2006");
    let moved = records(&d.join("ap.pcap"));
    assert_eq!(moved.len(), plain.len());
    let start_ns = 1_155_643_200_500_000_000;
    assert!(moved
        .iter()
        .zip(&plain)
        .all(|(m, p)| m.0 == p.0 + start_ns && m.2 == p.2));
    let late = format!("start = \"2106-02-07T06:28:00Z\"\n{PASS}");
    let e = wayside_sim::scenario::load(&late, &[], None, 0)
        .unwrap_err()
        .0;
    assert!(
        e.starts_with("start: 2106-02-07T06:28:00Z: the run must lie between"),
        "{e}"
    );
    let bad = format!("start = \"15 Aug 2006\"\n{PASS}");
    let e = wayside_sim::scenario::load(&bad, &[], None, 0)
        .unwrap_err()
        .0;
    assert!(
        e.starts_with("start: \"15 Aug 2006\" is not an RFC 3339 time"),
        "{e}"
    );
}

#[test]
fn test_every_captured_row_is_one_record_matching_the_trace() {
    let (out, d) = run_pcap(PASS, "rows");
    let f = &out.trace.frames;
    assert_eq!(out.pcaps.len(), 3);
    let mut kinds = std::collections::BTreeSet::new();
    let mut bad = 0;
    for (n, name) in out.node_names.iter().enumerate() {
        let rows: Vec<usize> = (0..f.len())
            .filter(|&i| f.node[i] == n as u32)
            .filter(|&i| {
                f.event[i] != PhyEvent::Drop as u8 || f.reason[i] == DropReason::Error as u8
            })
            .collect();
        let recs = records(&d.join(format!("{name}.pcap")));
        assert_eq!(
            recs.len(),
            rows.len(),
            "{name}: records against captured rows"
        );
        assert!(rows.len() > 100, "{name}: only {} rows", rows.len());
        for (&i, (ts, rt, mpdu)) in rows.iter().zip(&recs) {
            assert_eq!(*ts, f.time_ns[i]);
            assert_eq!(
                u64::from_le_bytes(rt[8..16].try_into().unwrap()),
                f.time_ns[i] / 1000,
                "TSFT"
            );
            let flags = rt[16];
            let is_bad = f.event[i] == PhyEvent::Drop as u8;
            assert_eq!(flags & 0x40 != 0, is_bad, "bad-FCS flag");
            assert_eq!(f32::from(rt[17]) / 2.0, f.rate_mbps[i]);
            if f.event[i] == PhyEvent::Tx as u8 {
                assert_eq!(rt.len(), 23);
            } else {
                // The whole dBm nearest the power (rounded from the f64 the
                // trace holds as f32: within half a dB of the trace's value).
                let signal = f32::from(rt[22] as i8);
                assert!(
                    (signal - f.rssi_dbm[i]).abs() <= 0.5 + 1e-3,
                    "signal dBm {signal} against {}",
                    f.rssi_dbm[i]
                );
                assert_eq!(rt[23] as i8, -95, "noise dBm");
            }
            assert_eq!(mpdu.len() as u32, f.bytes[i], "MPDU length is the PSDU");
            let (body, fcs) = mpdu.split_at(mpdu.len() - 4);
            let ok = crc32fast::hash(body) == u32::from_le_bytes(fcs.try_into().unwrap());
            assert_eq!(ok, !is_bad, "FCS correct unless the row failed it");
            let fc = mpdu[0];
            if fc & 0x0c != 0x04 {
                // management and data frames carry the sequence number
                assert_eq!(u16::from_le_bytes([mpdu[22], mpdu[23]]) >> 4, f.seq[i]);
                assert_eq!(mpdu[1] & 0x08 != 0, f.attempt[i] > 0, "retry bit");
            }
            bad += usize::from(is_bad);
            kinds.insert(f.kind[i]);
        }
    }
    assert!(bad > 0, "no failed-FCS frame to check");
    assert!(kinds.len() >= 8, "frame kinds captured: {kinds:?}");
}

#[test]
fn test_same_seed_gives_byte_identical_pcaps() {
    let (a, da) = run_pcap(PASS, "same-a");
    let (_, db) = run_pcap(PASS, "same-b");
    for p in &a.pcaps {
        let name = p.file_name().unwrap();
        let (x, y) = (
            std::fs::read(da.join(name)).unwrap(),
            std::fs::read(db.join(name)).unwrap(),
        );
        assert!(x.len() > 10_000);
        assert!(x == y, "{name:?} differs between two runs of one seed");
    }
    let other = run_scenario_pcap(PASS, &[], Some(4), 0, Some(&dir("same-c"))).unwrap();
    assert_ne!(
        std::fs::read(&other.pcaps[0]).unwrap(),
        std::fs::read(&a.pcaps[0]).unwrap(),
        "another seed, another capture"
    );
}

#[test]
fn test_sniffer_does_not_disturb_the_run() {
    let without = PASS
        .replace("[[node]]\nname = \"sniffer\"\nposition = [30, -5]\n", "")
        .replace("[pcap]\nsniffer = \"sniffer\"\n", "");
    assert!(!without.contains("sniffer"));
    let a = run_scenario(&without, &[], Some(3), 0).unwrap();
    let (b, _) = run_pcap(PASS, "disturb");
    let s = b.node_names.iter().position(|n| n == "sniffer").unwrap() as u32;
    let (fa, fb) = (&a.trace.frames, &b.trace.frames);
    let keep: Vec<usize> = (0..fb.len()).filter(|&i| fb.node[i] != s).collect();
    assert_eq!(keep.len(), fa.len());
    for (j, &i) in keep.iter().enumerate() {
        assert_eq!(
            (fa.time_ns[j], fa.node[j], fa.event[j], fa.seq[j]),
            (fb.time_ns[i], fb.node[i], fb.event[i], fb.seq[i])
        );
        assert_eq!(fa.rssi_dbm[j].to_bits(), fb.rssi_dbm[i].to_bits());
    }
    assert_eq!(a.trace.transport.len(), b.trace.transport.len());
    let sniffed = (0..fb.len()).filter(|&i| fb.node[i] == s).count();
    let sent = (0..fb.len())
        .filter(|&i| fb.node[i] == s && fb.event[i] == PhyEvent::Tx as u8)
        .count();
    assert_eq!(sent, 0, "the sniffer transmitted");
    let unicast_heard = (0..fb.len())
        .filter(|&i| fb.node[i] == s && fb.kind[i] == 0 && fb.event[i] == PhyEvent::Rx as u8)
        .count();
    assert!(
        sniffed > 1000 && unicast_heard > 100,
        "the sniffer heard {sniffed} frames, {unicast_heard} of them data"
    );
}

#[test]
fn test_pcap_section_errors_name_the_key() {
    let cases = [
        (
            "[pcap]\nsniffer = \"sniffer\"\n",
            "[pcap]\nsniffer = \"nobody\"\n",
            "pcap.sniffer: 'nobody': no such node",
        ),
        (
            "name = \"sniffer\"\nposition = [30, -5]\n",
            "name = \"sniffer\"\nrole = \"sta\"\nposition = [30, -5]\n",
            "role = \"independent\"",
        ),
        (
            "[pcap]\nsniffer = \"sniffer\"\n",
            "[pcap]\nnodes = [\"ap\", \"bus\"]\n",
            "pcap.nodes[1]: no node with a radio named 'bus'",
        ),
        (
            "[pcap]\nsniffer = \"sniffer\"\n",
            "[pcap]\nsniffer = \"car\"\n",
            "pcap.sniffer: 'car' must have a radio",
        ),
        (
            "[pcap]\nsniffer = \"sniffer\"\n",
            "[pcap]\nnodes = []\n",
            "pcap.nodes: give at least one radio",
        ),
        (
            "[pcap]\nsniffer = \"sniffer\"\n",
            "[pcap]\nsniffer = \"sniffer\"\nsnaplen = 96\n",
            "snaplen",
        ),
    ];
    for (from, to, want) in cases {
        let text = PASS.replace(from, to);
        let e = run_scenario(&text, &[], None, 0)
            .err()
            .unwrap_or_else(|| panic!("{to} accepted"))
            .0;
        assert!(e.contains(want), "{e}");
    }
    let text = PASS.replace("to = \"car\"", "to = \"sniffer\"");
    let e = run_scenario(&text, &[], None, 0).err().unwrap().0;
    assert!(
        e.contains("pcap.sniffer: 'sniffer' is named by a [[app]]"),
        "{e}"
    );
}

#[test]
fn test_unwritable_directory_is_a_clear_error() {
    let file = dir("blocked");
    std::fs::write(&file, b"a file, not a directory").unwrap();
    let e = run_scenario_pcap(PASS, &[], Some(1), 0, Some(&file.join("pcap")))
        .err()
        .unwrap()
        .0;
    assert!(
        e.starts_with("pcap: cannot write") && e.contains("give a directory that can be created"),
        "{e}"
    );
}
