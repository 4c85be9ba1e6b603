-- Table names resolved as PostgreSQL resolves them (README: "Table
-- names"): dots inside quotes, capitals, relations that are no table.
CREATE SCHEMA "x.y";
CREATE SCHEMA x;
CREATE TABLE "x.y".z (id int PRIMARY KEY);
CREATE TABLE x."y.z" (id int PRIMARY KEY);
CREATE TABLE "Ledger" (id int PRIMARY KEY);
CREATE TABLE x."Entry" (id int PRIMARY KEY);
CREATE SEQUENCE ticket_seq;
GRANT USAGE ON SCHEMA "x.y", x TO PUBLIC;
GRANT SELECT ON ALL TABLES IN SCHEMA "x.y", x TO PUBLIC;
