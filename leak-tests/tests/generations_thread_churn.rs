//! The allocation hooks under thread churn: threads born and ended by the hundred, each
//! allocating, growing and freeing blocks of watched and unwatched sizes (stacks taken in the
//! hooks), handing blocks to other threads to free, while the main thread advances generations
//! and reads the record. No deadlock (a watchdog aborts the process if the churn does not end),
//! no crash, and the record stays exact: it holds to the byte what the churn still keeps.
//! Process-wide (the hooks are the process's): one test here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use leakcheck::workspace::generations;

#[global_allocator]
static A: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const ROUNDS: usize = 60;
const THREADS: usize = 16;

/// One thread's work: blocks made, grown by reallocs, some kept, some sent away to be freed.
fn churn(seed: usize, away: mpsc::Sender<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut kept = Vec::new();
    for i in 0..200 {
        let size = [48, 320, 3000, 5000, 70_000][(seed + i) % 5];
        let mut v = std::hint::black_box(vec![i as u8; size]);
        v.extend_from_slice(&[1; 100]);
        match i % 4 {
            0 => kept.push(v),
            1 => {
                let _ = away.send(v);
            }
            _ => drop(v),
        }
    }
    kept.truncate(3);
    kept
}

#[test]
fn threads_born_and_ended_by_the_hundred_neither_hang_nor_break_the_record() {
    let g = generations::install().expect("generations");
    for size in [48, 320, 3072, 5120] {
        g.watch(size);
    }
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for _ in 0..1200 {
                if done.load(Ordering::Acquire) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            eprintln!("thread churn did not end in 120 s: a lock in the hooks?");
            std::process::abort();
        })
    };
    let before = g.total().bytes;
    let from = g.current();
    let mut kept = Vec::new();
    for round in 0..ROUNDS {
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        // A thread that frees what the others send it (frees on a thread the block was not made on).
        let freer = std::thread::spawn(move || rx.into_iter().map(|v| v.len()).sum::<usize>());
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || churn(round * THREADS + t, tx))
            })
            .collect();
        drop(tx);
        // The record is read and advanced while the threads run.
        let _ = g.survivors(from, g.current());
        g.advance();
        for w in workers {
            kept.extend(w.join().expect("a churning thread panicked"));
        }
        assert!(freer.join().expect("the freeing thread panicked") > 0);
    }
    assert!(g.exact(), "the record missed allocations under thread churn");
    let held: i64 = kept.iter().map(|v| v.capacity() as i64).sum();
    let grown = g.total().bytes - before;
    // What the churn keeps (its blocks and the vector of them) is in the record: at least the
    // blocks, and not far beyond them (the list's own buffer, the threads' leftovers).
    assert!(grown >= held, "record grew {grown} B, the churn keeps {held} B");
    drop(kept);
    done.store(true, Ordering::Release);
    watchdog.join().expect("watchdog");
}
