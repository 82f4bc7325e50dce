//! Property: random segments in any state never panic and never deliver
//! more than was sent.

use super::*;

fn arb_segment() -> impl Strategy<Value = (Segment, bool)> {
    (
        any::<(u32, u32, u32, u8)>(),
        prop_oneof![Just(0u32), Just(1460), 0u32..70_000],
        any::<[Option<(u32, u32)>; 3]>(),
        any::<(Option<u16>, bool, bool)>(),
        any::<bool>(),
    )
        .prop_map(|((seq, ack, window, f), len, sack, (mss, sp, ws), near)| {
            let s = Segment {
                src_port: B,
                dst_port: A,
                seq,
                ack,
                flags: flags(
                    f & 1 != 0,
                    f & 2 != 0,
                    f & 4 != 0,
                    f & 8 != 0 && f & 16 != 0,
                ),
                window,
                len,
                mss,
                sack_permitted: sp,
                window_scale: ws,
                sack,
            };
            (s, near)
        })
}

/// Endpoints in various states, each after a plausible history.
fn in_state(which: u8, profile: TcpProfile) -> Tcp {
    let mut t = match which % 6 {
        0 => Tcp::listen(profile.config(), A, 77),
        1 => {
            let mut t = Tcp::connect(SimTime::ZERO, profile.config(), A, B, 10);
            drain(&mut t, SimTime::ZERO);
            t
        }
        2 => {
            let mut t = Tcp::listen(profile.config(), A, 77);
            t.handle_segment(ms(0), &from_b(PISS, 0, flags(true, false, false, false)));
            t
        }
        _ => {
            let mut t = client(profile, u32::MAX - 3);
            t.send(1_000_000);
            fill(&mut t, ms(20), 65535, 12);
            if which % 6 == 4 {
                t.close();
            }
            if which % 6 == 5 {
                let mut fin = ack_from_b(u32::MAX - 2, 65535, &[]);
                fin.flags.fin = true;
                t.handle_segment(ms(20), &fin);
            }
            t
        }
    };
    drain(&mut t, ms(20));
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn prop_random_segments_never_panic(
        which in 0u8..6,
        profile in prop_oneof![Just(TcpProfile::Linux26), Just(TcpProfile::LinuxModern), Just(TcpProfile::WindowsXp)],
        segs in prop::collection::vec(arb_segment(), 1..60),
        steps in prop::collection::vec(0u64..5_000, 1..60),
    ) {
        let mut t = in_state(which, profile);
        let mut now = ms(20);
        let mut fed: u64 = 0;
        let acked_before = t.bytes_acked();
        for (i, (mut s, near)) in segs.into_iter().enumerate() {
            if near {
                // Mostly-plausible sequence numbers exercise deeper paths.
                s.seq = PISS.wrapping_add(1).wrapping_add(s.seq % 200_000);
                s.ack = (u32::MAX - 2).wrapping_add(s.ack % 40_000);
            }
            fed += s.len as u64;
            t.handle_segment(now, &s);
            let out = drain(&mut t, now);
            prop_assert!(out.len() < 10_000);
            while t.poll_event().is_some() {}
            now += ms(steps[i % steps.len()]);
            if let Some(at) = t.poll_timeout() {
                if at <= now {
                    t.handle_timeout(now);
                    drain(&mut t, now);
                }
            }
            prop_assert!(t.bytes_received() <= fed);
            prop_assert!(t.bytes_acked() >= acked_before);
            prop_assert!(t.cwnd() >= 1);
        }
    }
}
