// Asserts: an internal-state field whose type serde cannot write and read back is an error at
// its type explaining that a journaled run writes state to disk.
use cameleon::prelude::*;

#[derive(Clone, Default)]
pub struct Cache {
    pub hits: u32,
}

#[operator(id = "cached")]
pub struct Cached {
    cache: Cache,
    #[input]
    in_data: In<DataString>,
}

impl Run for Cached {
    fn run(&mut self, _: &mut Firing<'_, Self>) -> Result<(), OpError> {
        self.cache.hits += 1;
        Ok(())
    }
}

fn main() {}
