//! Background file-system work of the store, in order on one helper
//! thread, so that the node's loop (which also receives the next file)
//! does not wait for it:
//!
//! - `fdatasync` of partial files while they still arrive, each followed
//!   by the write of the receive vector it makes true (a vector never
//!   names bytes not yet durable), so that the commit's own sync finds
//!   little left to write;
//! - commits of received files (their syncs cost milliseconds each), whose
//!   results the store hands back to the node;
//! - removal of superseded version directories (freeing a large file's
//!   extents costs milliseconds; one left by a crash is removed at the
//!   next open).
//!
//! Dropping a [`Writeback`] waits for the queued work, so a store reopened
//! in the same process never races with it.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Sender};
use std::thread::JoinHandle;

type Job = Box<dyn FnOnce() + Send>;

/// Hands work to the helper thread (started on first use; it ends when
/// this is dropped, after finishing what was queued).
#[derive(Default)]
pub struct Writeback {
    worker: Option<(Sender<Job>, JoinHandle<()>)>,
}

impl Writeback {
    /// Queues `job`, to run after those queued before it.
    pub fn run(&mut self, job: impl FnOnce() + Send + 'static) {
        let (tx, _) = self.worker.get_or_insert_with(|| {
            let (tx, rx) = channel::<Job>();
            let handle = std::thread::spawn(move || rx.into_iter().for_each(|job| job()));
            (tx, handle)
        });
        let _ = tx.send(Box::new(job));
    }

    /// Waits until the work queued so far is done.
    pub fn wait(&mut self) {
        let (tx, rx) = channel();
        self.run(move || {
            let _ = tx.send(());
        });
        let _ = rx.recv();
    }

    /// Queues the removal of directory `dir` and everything in it (a
    /// failure is logged: recovery removes what is left).
    pub fn remove_dir_soon(&mut self, dir: PathBuf) {
        self.run(move || {
            if let Err(e) = std::fs::remove_dir_all(&dir) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!("cannot remove {}: {e}", dir.display());
                }
            }
        });
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.worker.take() {
            drop(tx);
            let _ = handle.join();
        }
    }
}
