-- Randomized rounds (TestChurnRounds) rebuild and compare the whole target
-- in every round, and FerretDB, the test server, moves a few thousand
-- documents a second: the rounds run on Pagila's first 150 customers with
-- all their rentals and payments (2 bucket pages each, as in the whole
-- database) instead of 599. Every other table, type and partition stays.
DELETE FROM payment WHERE customer_id > 150 OR rental_id IN (SELECT rental_id FROM rental WHERE customer_id > 150);
DELETE FROM rental WHERE customer_id > 150;
DELETE FROM customer WHERE customer_id > 150;
