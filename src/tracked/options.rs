//! Options-like handles: Options, BlockBasedOptions, Cache, WriteBufferManager, Env,
//! ReadOptions, WriteOptions.

use std::panic::Location;

use rocksdb::{BlockBasedOptions, Cache, Env, Options, ReadOptions, WriteBufferManager, WriteOptions};

use super::deref_and_token;
use crate::{ledger::HandleKind, ledger::Hold, ledger::Ledger, ledger::Token};

/// A tracked block or row cache (LRU or HyperClock).
pub struct TrackedCache {
    inner: Cache,
    capacity_bytes: usize,
    token: Token,
}
deref_and_token!(TrackedCache, Cache);

/// `Cache::clone` is another owner of the same native cache (an `Arc`), which lives until every
/// owner is gone: the clone is registered as a Cache handle of its own, at the caller's line, so a
/// forgotten clone is reported where it was made. It is not declared shared because the original
/// is: declare it (or keep it where the ledger can see it released).
impl Clone for TrackedCache {
    #[track_caller]
    fn clone(&self) -> Self {
        let token = self.token.ledger().register_at(HandleKind::Cache, Location::caller());
        TrackedCache { inner: self.inner.clone(), capacity_bytes: self.capacity_bytes, token }
    }
}

impl TrackedCache {
    /// `Cache::new_lru_cache`, registered in `ledger`.
    #[track_caller]
    pub fn new_lru(ledger: &Ledger, capacity_bytes: usize) -> Self {
        let inner = Cache::new_lru_cache(capacity_bytes);
        TrackedCache { inner, capacity_bytes, token: ledger.register_at(HandleKind::Cache, Location::caller()) }
    }

    /// `Cache::new_hyper_clock_cache`, registered in `ledger`.
    #[track_caller]
    pub fn new_hyper_clock(ledger: &Ledger, capacity_bytes: usize, estimated_entry_charge: usize) -> Self {
        let inner = Cache::new_hyper_clock_cache(capacity_bytes, estimated_entry_charge);
        TrackedCache { inner, capacity_bytes, token: ledger.register_at(HandleKind::Cache, Location::caller()) }
    }

    /// Its capacity in bytes (rust-rocksdb has no getter: the value it was made with or last set
    /// through [`TrackedCache::set_capacity`]).
    pub fn capacity(&self) -> usize {
        self.capacity_bytes
    }

    /// `Cache::set_capacity`, remembering the value for [`TrackedCache::capacity`].
    pub fn set_capacity(&mut self, capacity_bytes: usize) {
        self.inner.set_capacity(capacity_bytes);
        self.capacity_bytes = capacity_bytes;
    }
}

/// A tracked write buffer manager.
pub struct TrackedWriteBufferManager {
    inner: WriteBufferManager,
    cache: Option<Hold>,
    token: Token,
}
deref_and_token!(TrackedWriteBufferManager, WriteBufferManager);

/// `WriteBufferManager::clone` is another owner of the same native manager (an `Arc`): a handle
/// of its own at the caller's line, which keeps the charged cache alive as the original does.
impl Clone for TrackedWriteBufferManager {
    #[track_caller]
    fn clone(&self) -> Self {
        let token = self.token.ledger().register_at(HandleKind::WriteBufferManager, Location::caller());
        let cache = self.cache.as_ref().map(|h| h.rehold(&token));
        TrackedWriteBufferManager { inner: self.inner.clone(), cache, token }
    }
}

impl TrackedWriteBufferManager {
    /// `WriteBufferManager::new_write_buffer_manager`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger, buffer_size: usize, allow_stall: bool) -> Self {
        let inner = WriteBufferManager::new_write_buffer_manager(buffer_size, allow_stall);
        let token = ledger.register_at(HandleKind::WriteBufferManager, Location::caller());
        TrackedWriteBufferManager { inner, cache: None, token }
    }

    /// `WriteBufferManager::new_write_buffer_manager_with_cache`: memtable memory is charged to
    /// `cache`, which the manager keeps alive.
    #[track_caller]
    pub fn new_with_cache(ledger: &Ledger, buffer_size: usize, allow_stall: bool, cache: &TrackedCache) -> Self {
        let inner =
            WriteBufferManager::new_write_buffer_manager_with_cache(buffer_size, allow_stall, cache.inner.clone());
        let token = ledger.register_at(HandleKind::WriteBufferManager, Location::caller());
        let cache = Some(cache.token.held_by(&token));
        TrackedWriteBufferManager { inner, cache, token }
    }

    /// The ledger id of the cache its memtables are charged to, if any.
    pub fn charged_cache(&self) -> Option<u64> {
        self.cache.as_ref().map(Hold::id)
    }
}

/// A tracked environment.
pub struct TrackedEnv {
    inner: Env,
    token: Token,
}
deref_and_token!(TrackedEnv, Env);

/// `Env::clone` is another owner of the same native environment (an `Arc`): a handle of its own
/// at the caller's line.
impl Clone for TrackedEnv {
    #[track_caller]
    fn clone(&self) -> Self {
        TrackedEnv {
            inner: self.inner.clone(),
            token: self.token.ledger().register_at(HandleKind::Env, Location::caller()),
        }
    }
}

impl TrackedEnv {
    /// `Env::new` (the default environment), registered in `ledger`.
    ///
    /// # Errors
    /// RocksDB's error when the environment cannot be created.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Env::new()?;
        Ok(TrackedEnv { inner, token: ledger.register_at(HandleKind::Env, site) })
    }

    /// `Env::mem_env` (an in-memory environment), registered in `ledger`.
    ///
    /// # Errors
    /// RocksDB's error when the environment cannot be created.
    #[track_caller]
    pub fn mem_env(ledger: &Ledger) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Env::mem_env()?;
        Ok(TrackedEnv { inner, token: ledger.register_at(HandleKind::Env, site) })
    }
}

/// Tracked `BlockBasedOptions`. Keeps its block cache alive, as rust-rocksdb's does.
pub struct TrackedBlockBasedOptions {
    inner: BlockBasedOptions,
    block_cache: Option<Hold>,
    token: Token,
}
deref_and_token!(TrackedBlockBasedOptions, BlockBasedOptions);

impl TrackedBlockBasedOptions {
    /// `BlockBasedOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedBlockBasedOptions {
            inner: BlockBasedOptions::default(),
            block_cache: None,
            token: ledger.register_at(HandleKind::BlockBasedOptions, Location::caller()),
        }
    }

    /// `set_block_cache`, recording that these options keep `cache` alive.
    pub fn set_block_cache(&mut self, cache: &TrackedCache) {
        self.inner.set_block_cache(&cache.inner);
        self.block_cache = Some(cache.token.held_by(&self.token));
    }
}

/// What an `Options` keeps alive, slot by slot as rust-rocksdb's `outlive` bundle: setting a slot
/// again replaces the previous hold.
#[derive(Default)]
pub(crate) struct OptionHolds {
    env: Option<Hold>,
    row_cache: Option<Hold>,
    blob_cache: Option<Hold>,
    block_cache: Option<Hold>,
    write_buffer_manager: Option<Hold>,
}

impl OptionHolds {
    /// The same holds, taken again on behalf of `holder`.
    pub(crate) fn rehold(&self, holder: &Token) -> OptionHolds {
        let re = |h: &Option<Hold>| h.as_ref().map(|h| h.rehold(holder));
        OptionHolds {
            env: re(&self.env),
            row_cache: re(&self.row_cache),
            blob_cache: re(&self.blob_cache),
            block_cache: re(&self.block_cache),
            write_buffer_manager: re(&self.write_buffer_manager),
        }
    }
}

/// Tracked `Options`. Keeps its env, caches and write buffer manager alive, as rust-rocksdb's do;
/// a DB opened with them takes its own holds on the same objects.
pub struct TrackedOptions {
    pub(crate) inner: Options,
    pub(crate) holds: OptionHolds,
    pub(crate) token: Token,
}
deref_and_token!(TrackedOptions, Options);

/// `Options::clone` makes a new native object (`rocksdb_options_create_copy`): the copy is a new
/// Options handle, registered at the caller's line, keeping the same caches, manager and
/// environment alive as the original.
impl Clone for TrackedOptions {
    #[track_caller]
    fn clone(&self) -> Self {
        let token = self.token.ledger().register_at(HandleKind::Options, Location::caller());
        TrackedOptions { inner: self.inner.clone(), holds: self.holds.rehold(&token), token }
    }
}

impl TrackedOptions {
    /// `Options::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedOptions {
            inner: Options::default(),
            holds: OptionHolds::default(),
            token: ledger.register_at(HandleKind::Options, Location::caller()),
        }
    }

    /// `set_block_based_table_factory`: the table options are copied; their block cache is kept
    /// alive by these options from now on.
    pub fn set_block_based_table_factory(&mut self, factory: &TrackedBlockBasedOptions) {
        self.inner.set_block_based_table_factory(&factory.inner);
        self.holds.block_cache = factory.block_cache.as_ref().map(|h| h.rehold(&self.token));
    }

    /// `set_row_cache`, keeping `cache` alive.
    pub fn set_row_cache(&mut self, cache: &TrackedCache) {
        self.inner.set_row_cache(&cache.inner);
        self.holds.row_cache = Some(cache.token.held_by(&self.token));
    }

    /// `set_blob_cache`, keeping `cache` alive.
    pub fn set_blob_cache(&mut self, cache: &TrackedCache) {
        self.inner.set_blob_cache(&cache.inner);
        self.holds.blob_cache = Some(cache.token.held_by(&self.token));
    }

    /// `set_write_buffer_manager`, keeping `manager` alive.
    pub fn set_write_buffer_manager(&mut self, manager: &TrackedWriteBufferManager) {
        self.inner.set_write_buffer_manager(&manager.inner);
        self.holds.write_buffer_manager = Some(manager.token.held_by(&self.token));
    }

    /// `set_env`, keeping `env` alive.
    pub fn set_env(&mut self, env: &TrackedEnv) {
        self.inner.set_env(&env.inner);
        self.holds.env = Some(env.token.held_by(&self.token));
    }
}

/// Tracked `ReadOptions`. An iterator made with them owns them (their token moves into it).
pub struct TrackedReadOptions {
    pub(crate) inner: ReadOptions,
    pub(crate) token: Token,
}
deref_and_token!(TrackedReadOptions, ReadOptions);

impl TrackedReadOptions {
    /// `ReadOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedReadOptions {
            inner: ReadOptions::default(),
            token: ledger.register_at(HandleKind::ReadOptions, Location::caller()),
        }
    }
}

/// Tracked `WriteOptions`. Pass `&tracked` wherever rust-rocksdb wants `&WriteOptions`.
pub struct TrackedWriteOptions {
    inner: WriteOptions,
    token: Token,
}
deref_and_token!(TrackedWriteOptions, WriteOptions);

impl TrackedWriteOptions {
    /// `WriteOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedWriteOptions {
            inner: WriteOptions::default(),
            token: ledger.register_at(HandleKind::WriteOptions, Location::caller()),
        }
    }
}
