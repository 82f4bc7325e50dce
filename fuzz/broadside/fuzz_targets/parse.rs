//! Fuzzes every parser of untrusted bytes in `broadside`: packets,
//! certificates and bit vectors. A parse must never panic, and an accepted
//! packet must re-emit to the same bytes.
#![no_main]

use broadside::wire::{Message, MAX_SEGMENT_BLOCKS};
use broadside::{BitVec, Certificate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse(data) {
        assert_eq!(m.to_vec(), data);
    }
    let _ = Certificate::decode(data);
    let _ = BitVec::decode(data, MAX_SEGMENT_BLOCKS);
});
