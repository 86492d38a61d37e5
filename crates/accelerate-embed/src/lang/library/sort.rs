//! Sorting: a stable least-significant-digit radix sort built from the
//! primitives, one bit per pass, as the paper's radix-sort benchmark does
//! (Blelloch's `split`, ICFP'13 §5.8).
//!
//! Each key is first mapped to an unsigned integer whose order is the
//! key's order ([`SortKey::radix`]). Then, for every bit from the least
//! significant: with `f_i` the bit of element `i`, `ones_i` the number of
//! elements before `i` whose bit is 1 (an exclusive scan) and `zeros` the
//! number of elements whose bit is 0, element `i` moves to
//! `i - ones_i` if `f_i = 0` and to `zeros + ones_i` if `f_i = 1`. Each
//! pass is stable, so after the last one the array is sorted and equal keys
//! keep their order.
//!
//! Floating-point keys sort in IEEE total order (Rust's `total_cmp`):
//! `-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN`, where `-NaN` is a
//! NaN with its sign bit set. So `-0.0` sorts before `+0.0`, and the usual
//! (positive) NaN sorts last.

use super::gather_scatter::gather;
use super::sort_native;
use crate::lang::acc::{generate, Acc, AsAcc};
use crate::lang::exp::{constant, index1, just, lift, unindex1, Exp};
use crate::lang::foreign::Foreign;
use accelerate_base::array::{pool, Elt, PrimElt, Snoc, Vector, Z};

/// Key types a radix sort can order: the primitive numeric types.
pub trait SortKey: PrimElt + Copy + Send + Sync {
    /// The number of significant bits of the radix.
    const BITS: u32;
    /// An unsigned integer ordered as the key (total order for floats).
    fn radix(key: &Exp<Self>) -> Exp<u64>;
    /// The same radix of a key on the host, to the bit (the native sort,
    /// Note [A native sort] in `sort_native.rs`).
    fn radix_of(self) -> u64;
}

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            const BITS: u32 = <$t>::BITS;
            #[track_caller]
            fn radix(key: &Exp<Self>) -> Exp<u64> {
                key.cast::<u64>()
            }
            fn radix_of(self) -> u64 {
                self as u64
            }
        }
    )*};
}
unsigned_key!(u8, u16, u32, u64);

macro_rules! signed_key {
    ($($t:ty => $u:ty),*) => {$(
        impl SortKey for $t {
            const BITS: u32 = <$t>::BITS;
            /// Flipping the sign bit orders two's complement as unsigned.
            #[track_caller]
            fn radix(key: &Exp<Self>) -> Exp<u64> {
                (key.bitcast::<$u>() ^ (1 as $u).rotate_right(1)).cast::<u64>()
            }
            fn radix_of(self) -> u64 {
                ((self as $u) ^ (1 as $u).rotate_right(1)) as u64
            }
        }
    )*};
}
signed_key!(i8 => u8, i16 => u16, i32 => u32, i64 => u64);

macro_rules! float_key {
    ($($t:ty => $u:ty),*) => {$(
        impl SortKey for $t {
            const BITS: u32 = <$u>::BITS;
            /// Negative numbers (sign bit set) have all bits flipped, others
            /// only the sign bit: the IEEE total order as unsigned order.
            #[track_caller]
            fn radix(key: &Exp<Self>) -> Exp<u64> {
                let bits = key.bitcast::<$u>();
                let sign: $u = (1 as $u).rotate_right(1);
                let negative = (&bits & sign).ne(0 as $u);
                negative.select(!&bits, bits | sign).cast::<u64>()
            }
            fn radix_of(self) -> u64 {
                let bits = self.to_bits();
                let sign: $u = (1 as $u).rotate_right(1);
                (if bits & sign != 0 { !bits } else { bits | sign }) as u64
            }
        }
    )*};
}
float_key!(f32 => u32, f64 => u64);

/// One stable split pass on bit `bit` of the radix (first component).
#[track_caller]
fn split_pass<P: Elt>(xs: Acc<Vector<(u64, P)>>, bit: u32) -> Acc<Vector<(u64, P)>> {
    let flags = xs.map(move |x| ((x.fst() >> constant(bit as u64)) & 1u64).cast::<i64>());
    let ones_before = flags.scanl(0i64, |a, b| a + b);
    let n = xs.size();
    let zeros = &n - ones_before.index(index1(&n));
    let targets = generate(xs.shape(), |ix| {
        let ones = ones_before.index(ix);
        flags.index(ix).eq(0i64).select(unindex1(ix) - &ones, zeros + ones)
    });
    // every position receives exactly one element, so any array of the
    // right shape serves as the defaults
    xs.permute(|new, _old| new.clone(), &xs, |ix| just(index1(targets.index(ix))))
}

/// Sorts `(radix, payload)` pairs by the radix's low `bits` bits, stably.
#[track_caller]
fn radix_sort<P: Elt>(xs: Acc<Vector<(u64, P)>>, bits: u32) -> Acc<Vector<(u64, P)>> {
    (0..bits).fold(xs, |acc, b| split_pass(acc, b))
}

impl<K: SortKey> Acc<Vector<K>> {
    /// The keys in ascending order (total order for floats; see the module
    /// documentation), equal keys keeping their order. The interpreter
    /// and the CPU backend sort natively, eight bits a pass; other
    /// backends run the sort written in the language
    /// (`sort_in_language`; Note [A native sort]).
    #[track_caller]
    pub fn sort(&self) -> Acc<Vector<K>> {
        let native = Foreign::<Vector<K>, Vector<K>>::new("sort").host(|keys: Vector<K>| {
            let (sorted, spares) = sort_native::radix_sort(
                sort_native::Items::Borrowed(keys.as_slice()),
                K::BITS,
                |k| k.radix_of(),
                pool::column,
            )
            .ok_or("no memory for the sorted keys")?;
            spares.into_iter().for_each(pool::recycle);
            sort_native::vector_of(sorted.len(), vec![K::buffer(sorted)])
        });
        native.call(|keys| keys.sort_in_language(), self)
    }

    /// `sort` as the language writes it: one bit a pass (the module
    /// documentation), the fallback of the native sort.
    #[track_caller]
    pub fn sort_in_language(&self) -> Acc<Vector<K>> {
        let pairs = self.map(|k| lift((K::radix(k), k)));
        radix_sort(pairs, K::BITS).map(|p| p.snd())
    }

    /// The sorted keys paired with the position each came from (natively
    /// where `sort` is).
    #[track_caller]
    pub fn sort_with_indices(&self) -> Acc<Vector<(K, i64)>> {
        let native = Foreign::<Vector<K>, Vector<(K, i64)>>::new("sort_with_indices")
            .host(|keys: Vector<K>| sort_native::with_positions(keys.as_slice()));
        native.call(|keys| keys.sort_with_indices_in_language(), self)
    }

    /// `sort_with_indices` as the language writes it, its fallback.
    #[track_caller]
    pub fn sort_with_indices_in_language(&self) -> Acc<Vector<(K, i64)>> {
        let pairs = self.imap_positions().map(|p| {
            let (k, i) = p.unlift();
            lift((K::radix(&k), lift((k, i))))
        });
        radix_sort(pairs, K::BITS).map(|p| p.snd())
    }

    fn imap_positions(&self) -> Acc<Vector<(K, i64)>> {
        generate(self.shape(), |ix| lift((self.index(ix), unindex1(ix))))
    }
}

/// The values reordered so that their keys ascend, stably (keys and values
/// of different lengths: the shorter length, as `zip_with`): the values
/// gathered from the positions `sort_with_indices` gives their keys.
#[track_caller]
pub fn sort_by_key<K: SortKey, V: Elt>(
    keys: impl AsAcc<Vector<K>>,
    values: impl AsAcc<Array1<V>>,
) -> Acc<Vector<V>> {
    let (keys, values) = (keys.as_acc(), values.as_acc());
    let n = keys.length().min(values.length());
    let order = keys.take(n).sort_with_indices().map(|p| p.snd());
    gather(order, values)
}

type Array1<V> = accelerate_base::array::Array<Snoc<Z>, V>;
