-- DPoP proofs' single-use values are kept in the process's memory (`replay::InMemory`), not in a table. What is
-- kept here is how long values recorded by a process may live: a lease, extended a minute at a time before a
-- value that outlives it is accepted. A process that finds the lease of an earlier one unexpired knows that
-- values it never saw may still be live, and refuses what may have been used before it (latchkey_core::flow::proof).
CREATE TABLE proof_lease (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    until INTEGER NOT NULL
);
