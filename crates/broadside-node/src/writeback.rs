//! Background writeback of partial files: `fdatasync` on a helper thread
//! while a file is still arriving, so that the `fdatasync` a commit needs
//! before the file becomes current finds little left to write and the
//! node's loop (which also receives the next file) waits less. Purely a
//! matter of speed: durability still comes from the commit's own sync.

use std::fs::File;
use std::sync::mpsc::{channel, Sender};

/// Hands files to the writeback thread (started on first use; it ends when
/// this is dropped).
#[derive(Default)]
pub struct Writeback {
    tx: Option<Sender<File>>,
}

impl Writeback {
    /// Queues a sync of `file`'s data written so far (a clone of the
    /// handle: the caller keeps writing). Errors are left to the commit's
    /// own sync, which reports them.
    pub fn sync_soon(&mut self, file: &File) {
        let Ok(f) = file.try_clone() else {
            return;
        };
        let tx = self.tx.get_or_insert_with(|| {
            let (tx, rx) = channel::<File>();
            std::thread::spawn(move || {
                for f in rx {
                    let _ = f.sync_data();
                }
            });
            tx
        });
        let _ = tx.send(f);
    }
}
