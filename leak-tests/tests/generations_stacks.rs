//! The allocating stacks of watched sizes: taken inside jemalloc's hook for Rust's heap and for C
//! `malloc`, on any thread, named down to the function that asked; sizes not watched have none.
//! Process-wide (the hooks and the watched sizes are the process's): one test here.
#![allow(unsafe_code)]

use leakcheck::workspace::generations::{self, Generation, Generations, Survivor};
use leakcheck::workspace::stacks::{named_frames, own_function, resolve};

#[inline(never)]
fn keeps_a_rust_block(n: usize) -> Vec<u8> {
    std::hint::black_box(vec![7u8; n])
}

#[inline(never)]
fn keeps_a_c_block(n: usize) -> usize {
    // SAFETY: plain malloc; the block is freed by the test.
    std::hint::black_box(unsafe { libc::malloc(n) }) as usize
}

fn of_size(g: &Generations, generation: Generation, size: u64) -> Vec<Survivor> {
    g.survivors(generation, generation).into_iter().filter(|s| s.size == size).collect()
}

fn own(g: &Generations, s: &Survivor) -> String {
    let id = s.stack.unwrap_or_else(|| panic!("no stack for a watched size: {s:?}"));
    let frames = named_frames(&g.stack(id), &resolve);
    own_function(&frames).unwrap_or_else(|| panic!("no own frame in {frames:#?}")).to_string()
}

#[test]
fn watched_sizes_have_their_stacks_named_and_others_none() {
    let g = generations::install().expect("generations");
    g.unwatch_all();
    let generation = g.advance();
    // 3,000 B is jemalloc's 3,072 B class; 5,000 B is its 5,120 B class, not watched.
    g.watch(3072);
    let rust = keeps_a_rust_block(3000);
    let c = keeps_a_c_block(3000);
    let from_thread = std::thread::spawn(|| keeps_a_rust_block(3000)).join().expect("thread");
    let unwatched = keeps_a_rust_block(5000);
    g.advance();

    let watched = of_size(g, generation, 3072);
    assert_eq!(watched.len(), 3, "{watched:?}");
    let names: Vec<String> = watched.iter().map(|s| own(g, s)).collect();
    assert_eq!(names.iter().filter(|n| n.ends_with("keeps_a_rust_block")).count(), 2, "{names:?}");
    assert_eq!(names.iter().filter(|n| n.ends_with("keeps_a_c_block")).count(), 1, "{names:?}");
    let two_rust: Vec<_> = watched.iter().filter_map(|s| s.stack).collect();
    assert!(two_rust.len() == 3 && two_rust.iter().all(|&id| id != generations::OVERFLOW_STACK));

    let other = of_size(g, generation, 5120);
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].stack, None, "a size not watched has no stack");
    let (taken, kept) = g.stacks_taken();
    assert!(taken >= 3 && kept >= 2, "{taken} taken, {kept} kept");

    // Freed blocks leave the record, stack and all; nothing of them survives.
    drop((rust, from_thread, unwatched));
    // SAFETY: `c` came from malloc in keeps_a_c_block.
    unsafe { libc::free(c as *mut libc::c_void) };
    assert!(of_size(g, generation, 3072).is_empty());
    assert!(of_size(g, generation, 5120).is_empty());
    g.unwatch_all();
    assert_eq!(g.watched_classes(), (0, 0, 0, 0));

    // A block kept across generations and grown in three later ones: its chain follows the
    // reallocs (moved or in place), its last rise and the one before, and the stack of a rise in a
    // counted generation is taken though no size is watched. A growth within the generation that
    // made the block is none.
    let made = g.advance();
    g.count_growths_from(made + 2);
    let mut list = keeps_a_rust_block(1000);
    grows(&mut list, 1000);
    let uncounted = g.advance();
    grows(&mut list, 4000);
    let first = g.advance();
    grows(&mut list, 20_000);
    let second = g.advance();
    grows(&mut list, 200_000);
    g.advance();
    let survivors = g.survivors(made, second + 1);
    let kept: Vec<&Survivor> = survivors.iter().filter(|s| s.size >= 200_000).collect();
    assert_eq!(kept.len(), 1, "{survivors:?}");
    let chain = kept[0].chain.unwrap_or_else(|| panic!("a block grown across generations has a chain: {kept:?}"));
    assert_eq!((kept[0].generation, chain.last, chain.before), (second, second, first), "{kept:?}");
    // 28,672 B to 229,376 B (jemalloc's classes of the exact capacities): eight times.
    assert!((chain.factor - 8.0).abs() < 1e-9, "{chain:?}");
    assert_eq!(own(g, kept[0]), own_name_of_grows(g, kept[0]));
    assert_eq!(g.turnover(kept[0].stack.unwrap_or(0)), None, "a realloc's free of the old block is no turnover");
    assert!(uncounted < first && first < second);
    drop(list);
}

#[inline(never)]
fn grows(list: &mut Vec<u8>, more: usize) {
    list.reserve_exact(more);
    list.resize(list.len() + more, 1);
}

/// The function the growth's stack names: `grows`.
fn own_name_of_grows(g: &Generations, s: &Survivor) -> String {
    let name = own(g, s);
    assert!(name.ends_with("grows"), "{name}");
    name
}
