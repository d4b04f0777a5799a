//! Criterion benches of the memstore's hot paths: insert of a 4-cell row
//! into the active segment, and get of a row from a memstore whose data sits
//! in the active skiplist or in flat (cell-array / cell-chunk) segments.
//!
//! `cargo bench -p memstore --bench memstore_ops`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use memstore::{
    CellInput, ChunkPool, CompactionMode, CompactionPolicy, InMemoryFlushThreshold, IndexLayout, MemStore,
    MemStoreConfig, ReadOptions,
};

const ROWS: u64 = 100_000;

fn key(i: u64) -> [u8; 16] {
    let mut k = *b"user000000000000";
    let digits = format!("{:012}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000_000);
    k[4..].copy_from_slice(digits.as_bytes());
    k
}

fn memstore(policy: CompactionPolicy, layout: IndexLayout) -> MemStore {
    MemStore::new(MemStoreConfig {
        policy,
        flat_layout: layout,
        in_memory_flush_threshold: InMemoryFlushThreshold::Bytes(4 << 20),
        chunk_pool: ChunkPool::global(),
        compaction_mode: CompactionMode::Manual,
        ..MemStoreConfig::new("f")
    })
    .expect("valid config")
}

fn put_row(m: &MemStore, i: u64, seq: u64) {
    let k = key(i);
    let v = [7u8; 25];
    let cells = [
        CellInput::put(&k, b"f", b"field0", seq, &v),
        CellInput::put(&k, b"f", b"field1", seq, &v),
        CellInput::put(&k, b"f", b"field2", seq, &v),
        CellInput::put(&k, b"f", b"field3", seq, &v),
    ];
    m.add_row(&cells, seq).expect("valid row");
}

fn insert(c: &mut Criterion) {
    let mut g = c.benchmark_group("insert_row_4_cells");
    g.throughput(Throughput::Elements(4));
    for policy in [CompactionPolicy::None, CompactionPolicy::Basic] {
        let m = memstore(policy, IndexLayout::CellChunk);
        let mut i = 0u64;
        g.bench_function(BenchmarkId::from_parameter(policy.name()), |b| {
            b.iter(|| {
                i += 1;
                put_row(&m, i % ROWS, i);
                if i.is_multiple_of(200_000) {
                    // Keep the memstore bounded as a disk flush would.
                    let s = m.snapshot();
                    m.release_snapshot(s.id()).expect("snapshot");
                }
            })
        });
    }
    g.finish();
}

fn get(c: &mut Criterion) {
    let mut g = c.benchmark_group("get_row");
    for (name, layout, flatten) in [
        ("skiplist", IndexLayout::CellChunk, false),
        ("cell-array", IndexLayout::CellArray, true),
        ("cell-chunk", IndexLayout::CellChunk, true),
    ] {
        let m = memstore(CompactionPolicy::Basic, layout);
        for i in 0..ROWS {
            put_row(&m, i, i + 1);
        }
        if flatten {
            m.flush_in_memory();
            m.compact_pipeline();
        }
        let opts = ReadOptions::default();
        let mut i = 0u64;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                i = (i + 7919) % ROWS;
                black_box(m.get(&key(i), &opts))
            })
        });
    }
    g.finish();
}

criterion_group!(benches, insert, get);
criterion_main!(benches);
