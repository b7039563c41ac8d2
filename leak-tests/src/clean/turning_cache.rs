//! `turning-cache`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Keys of [`TurningCache`]'s data: 4 MiB of 1 KiB values.
const TURNING_KEYS: u64 = 4096;

/// A block cache shared by every open of the run that keeps turning over: 512 KiB in front of
/// 4 MiB of data read at random each cycle. Written against rust-rocksdb's own types (no tracked
/// wrapper, nothing declared shared) and with no `Lifecycle::let_go`: blocks that many cycles
/// read are in the cache at the end, and they are its state, which it shows by giving old blocks
/// back as it turns over.
///
/// The aggregate rule alone cannot call it clean: `unexplained_bytes` is inconclusive after 800
/// cycles (the cache's churn, [-1.9 KiB, 416 B] a cycle, seed 0, 2026-12-04). `retained_bytes`
/// judges it clean, and then the counter's undecided rule is shown, not judged.
#[allow(clippy::disallowed_types)] // rust-rocksdb's own types, as most users' stores are
pub struct TurningCache {
    dir: PathBuf,
    cache: rocksdb::Cache,
}

#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
impl TurningCache {
    /// The store in `dir/db`, with its data written and flushed before the run.
    ///
    /// # Errors
    /// RocksDB's, writing the data.
    pub fn new(dir: &Path) -> Result<Self> {
        let store = TurningCache { dir: dir.join("db"), cache: rocksdb::Cache::new_lru_cache(512 << 10) };
        let db = rocksdb::DB::open(&store.options(), &store.dir)?;
        for i in 0..TURNING_KEYS {
            db.put(i.to_be_bytes(), value(0, i, 1024))?;
        }
        db.flush()?;
        Ok(store)
    }

    fn options(&self) -> rocksdb::Options {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&self.cache);
        table.set_block_size(4 << 10);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts
    }
}

#[allow(clippy::disallowed_types, clippy::disallowed_methods)]
impl Lifecycle for TurningCache {
    type Store = rocksdb::DB;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.read", "work.write", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        fault(ctx, "open.db")?;
        Ok(rocksdb::DB::open(&self.options(), &self.dir)?)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        for i in 0..256u64 {
            if i == 128 {
                fault(ctx, "work.read")?;
            }
            let k = (c.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9)).rotate_left(29)
                % TURNING_KEYS;
            if db.get(k.to_be_bytes())?.is_none() {
                return Err(CleanStoreError(format!("key {k} missing in cycle {c}")));
            }
        }
        fault(ctx, "work.write")?;
        for i in 0..16 {
            let k = (c * 16 + i) % TURNING_KEYS;
            db.put(k.to_be_bytes(), value(c, k, 1024))?;
        }
        Ok(())
    }

    fn close(&mut self, db: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        // The DB closes when dropped, whether the flush failed or not.
        let flushed = fault(ctx, "close.flush").and_then(|()| Ok(db.flush()?));
        drop(db);
        flushed
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
