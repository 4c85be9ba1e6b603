WITH n0 AS (SELECT x."#i0", x."#c0" FROM (SELECT t."id" AS "#i0", t."id" AS "#c0" FROM "public"."author" AS t) AS x),
n1 AS (SELECT y."#i0" FROM (SELECT x.*, row_number() OVER (PARTITION BY p."#i0" ORDER BY x."#o0" ASC NULLS LAST, x."#t0") AS "#rn" FROM (SELECT DISTINCT "#i0", "#c0" FROM n0) AS p JOIN (SELECT t."id" AS "#i0", t."author_id" AS "#k0", t."created" AS "#o0", t."id" AS "#t0" FROM "public"."post" AS t) AS x ON p."#c0" = x."#k0") AS y WHERE y."#rn" <= 1),
n2 AS (SELECT x."#i0", x."#j0" FROM (SELECT t."id" AS "#i0", j."id" AS "#j0", j."author_id" AS "#k0" FROM "public"."post" AS j JOIN "public"."vote" AS t ON t."post_id" = j."id" WHERE t."id" IS NOT NULL) AS x WHERE EXISTS (SELECT 1 FROM n0 AS p WHERE p."#c0" = x."#k0")),
n3 AS (SELECT x."#i0", x."#i1" FROM (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t."author_id" AS "#k0" FROM "public"."book_author" AS t WHERE t."book_id" IS NOT NULL) AS x WHERE EXISTS (SELECT 1 FROM n0 AS p WHERE p."#c0" = x."#k0")),
n4 AS (SELECT x."#i0", x."#c0" FROM (SELECT t."id" AS "#i0", t."id" AS "#c0" FROM "public"."book" AS t) AS x),
n5 AS (SELECT x."#i0", x."#i1" FROM (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t."book_id" AS "#k0" FROM "public"."book_author" AS t WHERE t."author_id" IS NOT NULL) AS x WHERE EXISTS (SELECT 1 FROM n4 AS p WHERE p."#c0" = x."#k0")),
n6 AS (SELECT x."#i0" FROM (SELECT t::pg_catalog.text AS "#i0" FROM "public"."post_view" AS t WHERE (id <> 104)) AS x),
u0 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid" FROM "public"."author" AS t WHERE false),
r0 AS (SELECT u.*, 'other' AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u0 AS u ),
u1 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."author_id" AS "#k0" FROM "public"."post" AS t WHERE NOT EXISTS (SELECT 1 FROM n1 AS r WHERE r."#i0" = t."id") AND NOT EXISTS (SELECT 1 FROM n2 AS r WHERE r."#j0" = t."id")),
r1 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u1 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u1) AS v WHERE EXISTS (SELECT 1 FROM n0 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u1) AS v WHERE EXISTS (SELECT 1 FROM "public"."author" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u2 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."post_id" AS "#n0", t."id" AS "#v0" FROM "public"."vote" AS t WHERE NOT EXISTS (SELECT 1 FROM n2 AS r WHERE r."#i0" = t."id")),
r2 AS (SELECT u.*, CASE WHEN u."#v0" IS NULL THEN 'null-id' WHEN NOT lk."#n0" IS NOT NULL THEN 'not-linked' WHEN rk."#n0" IS NOT NULL THEN 'filtered' WHEN ak."#n0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u2 AS u LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u2) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS j WHERE j."id" = v."#n0")) AS lk ON lk."#n0" = u."#n0" LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u2) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS j JOIN n0 AS p ON p."#c0" = j."author_id" WHERE j."id" = v."#n0")) AS rk ON rk."#n0" = u."#n0" LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u2) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS j JOIN "public"."author" AS p ON p."id" = j."author_id" WHERE j."id" = v."#n0")) AS ak ON ak."#n0" = u."#n0"),
u3 AS (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t.tableoid AS "#oid", pg_catalog.json_build_array(pg_catalog.left(t."author_id"::pg_catalog.text, 61), pg_catalog.left(t."book_id"::pg_catalog.text, 61), pg_catalog.left(t."role"::pg_catalog.text, 61))::pg_catalog.text AS "#s", t."author_id" AS "#k0", t."book_id" AS "#v0" FROM "public"."book_author" AS t WHERE NOT EXISTS (SELECT 1 FROM n0 AS p WHERE p."#c0" = t."author_id" AND t."book_id" IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM n4 AS p WHERE p."#c0" = t."book_id" AND t."author_id" IS NOT NULL)),
r3 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN u."#v0" IS NULL THEN 'null-id' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u3 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u3) AS v WHERE EXISTS (SELECT 1 FROM n0 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u3) AS v WHERE EXISTS (SELECT 1 FROM "public"."author" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u4 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid" FROM "public"."book" AS t WHERE false),
r4 AS (SELECT u.*, 'other' AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u4 AS u ),
u5 AS (SELECT t::pg_catalog.text AS "#i0", NULL::pg_catalog.oid AS "#oid", pg_catalog.json_build_array(pg_catalog.left(t."id"::pg_catalog.text, 61), pg_catalog.left(t."title"::pg_catalog.text, 61))::pg_catalog.text AS "#s", coalesce((id <> 104), false) AS "#pass" FROM "public"."post_view" AS t WHERE NOT coalesce((id <> 104), false)),
r5 AS (SELECT u.*, CASE WHEN NOT u."#pass" THEN 'filtered' ELSE 'other' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u5 AS u )
SELECT 0::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."author"
UNION ALL
SELECT 0::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r0 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r0 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 1::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."post"
UNION ALL
SELECT 1::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r1 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r1 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 2::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."vote"
UNION ALL
SELECT 2::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r2 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r2 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 3::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."book_author"
UNION ALL
SELECT 3::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r3 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(x."#s" ORDER BY x."#s" COLLATE "C") AS samples FROM (SELECT r.* FROM r3 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#s" COLLATE "C" LIMIT 5) AS x) AS s
UNION ALL
SELECT 4::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."book"
UNION ALL
SELECT 4::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r4 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r4 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 5::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."post_view"
UNION ALL
SELECT 5::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r5 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(x."#s" ORDER BY x."#s" COLLATE "C") AS samples FROM (SELECT r.* FROM r5 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#s" COLLATE "C" LIMIT 5) AS x) AS s
ORDER BY 1, 2, 3
