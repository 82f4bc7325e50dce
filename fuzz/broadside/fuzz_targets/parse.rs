//! Fuzzes every parser of untrusted bytes in `broadside`: packets,
//! certificates (v1 and v2), bit vectors and hash-tree chunks. A parse must
//! never panic, and an accepted packet must re-emit to the same bytes.
#![no_main]

use broadside::merkle::Shape;
use broadside::wire::{Message, MAX_SEGMENT_BLOCKS};
use broadside::{BitVec, Certificate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse(data) {
        assert_eq!(m.to_vec(), data);
    }
    let _ = Certificate::decode(data);
    let _ = BitVec::decode(data, MAX_SEGMENT_BLOCKS);
    // A hash chunk: the first 6 bytes pick the tree and the chunk.
    if data.len() >= 6 {
        let leaves = u32::from(u16::from_be_bytes([data[0], data[1]])) + 1;
        let chunk = u32::from_be_bytes([data[2], data[3], data[4], data[5]]);
        if let Some(shape) = Shape::new(leaves, 2294) {
            // No SHA-256 output is all zeros, so only a chunk that is the
            // root itself (a one-leaf tree: no hashing, no proof) can match
            // an all-zero root.
            if let Some(got) = shape.verify_chunk(&[0; 32], chunk, &data[6..]) {
                assert_eq!((leaves, got), (1, vec![[0u8; 32]]));
            }
        }
    }
});
