WITH n0 AS (SELECT y."#i0" FROM (SELECT x.*, count(*) OVER (PARTITION BY x."#k0") - row_number() OVER (PARTITION BY x."#k0" ORDER BY x."#o0" ASC NULLS LAST, x."#o1" ASC NULLS LAST) AS "#after" FROM (SELECT t."id" AS "#i0", t."author_id" AS "#k0", t."at" AS "#o0", t."id" AS "#o1" FROM "public"."visit" AS t) AS x WHERE x."#k0" IS NOT NULL) AS y WHERE y."#after" >= 1),
n1 AS (SELECT x."#i0", x."#c0" FROM (SELECT t."id" AS "#i0", t."id" AS "#c0" FROM "public"."author" AS t WHERE (active)) AS x),
n2 AS (SELECT y."#i0", y."#c0", y."#c1" FROM (SELECT x.*, row_number() OVER (PARTITION BY p."#i0" ORDER BY x."#o0" DESC NULLS FIRST, x."#t0") AS "#rn" FROM (SELECT DISTINCT "#i0", "#c0" FROM n1) AS p JOIN (SELECT t."id" AS "#i0", t."category_id" AS "#c0", t."id" AS "#c1", t."author_id" AS "#k0", t."created" AS "#o0", t."id" AS "#t0" FROM "public"."post" AS t) AS x ON p."#c0" = x."#k0") AS y WHERE y."#rn" <= 2),
n3 AS (SELECT x."#i0" FROM (SELECT t."id" AS "#i0", t."id" AS "#k0" FROM "public"."category" AS t) AS x WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c0" = x."#k0")),
n4 AS (SELECT x."#i0" FROM (SELECT t."id" AS "#i0", t."post_id" AS "#k0" FROM "public"."comment" AS t) AS x WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = x."#k0")),
n5 AS (SELECT y."#i0", y."#i1" FROM (SELECT x.*, row_number() OVER (PARTITION BY p."#i0" ORDER BY x."#o0" ASC NULLS LAST, x."#t0", x."#t1") AS "#rn" FROM (SELECT DISTINCT "#i0", "#c0", "#c1" FROM n2) AS p JOIN (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t."post_id" AS "#k0", t."label" AS "#o0", t."post_id"::pg_catalog.text COLLATE "C" AS "#t0", t."label"::pg_catalog.text COLLATE "C" AS "#t1" FROM "public"."tag" AS t) AS x ON p."#c1" = x."#k0") AS y WHERE y."#rn" <= 2),
n6 AS (SELECT x."#i0" FROM (SELECT t."id" AS "#i0", t."post_id" AS "#k0" FROM "public"."vote" AS t) AS x WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = x."#k0")),
n7 AS (SELECT x."#i0", x."#i1" FROM (SELECT t.tableoid AS "#i0", t."id" AS "#i1", t."author_id" AS "#k0" FROM ONLY "public"."note" AS t) AS x WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = x."#k0")),
n8 AS (SELECT x."#i0", x."#i1" FROM (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t."author_id" AS "#k0" FROM "public"."event" AS t) AS x WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = x."#k0")),
n9 AS (SELECT x."#i0", x."#j0", x."#j1", x."#c0" FROM (SELECT t."id" AS "#i0", j.tableoid AS "#j0", j.ctid AS "#j1", t."id" AS "#c0", j."author_id" AS "#k0" FROM "public"."book_author" AS j JOIN "public"."book" AS t ON t."id" = j."book_id" WHERE (role <> 'ghost')) AS x WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = x."#k0")),
n10 AS (SELECT y."#i0" FROM (SELECT x.*, row_number() OVER (PARTITION BY p."#i0" ORDER BY x."#o0" ASC NULLS LAST, x."#t0") AS "#rn" FROM (SELECT DISTINCT "#i0", "#c0" FROM n9) AS p JOIN (SELECT t."id" AS "#i0", t."book_id" AS "#k0", t."n" AS "#o0", t."id" AS "#t0" FROM "public"."chapter" AS t) AS x ON p."#c0" = x."#k0") AS y WHERE y."#rn" <= 2),
n11 AS (SELECT y."#i0" FROM (SELECT x.*, row_number() OVER (PARTITION BY p."#i0" ORDER BY x."#o0" DESC NULLS FIRST, x."#o1" DESC NULLS FIRST, x."#t0") AS "#rn" FROM (SELECT DISTINCT "#i0", "#c0" FROM n1) AS p JOIN (SELECT t."id" AS "#i0", t."author_id" AS "#k0", t."at" AS "#o0", t."id" AS "#o1", t."id" AS "#t0" FROM "public"."visit" AS t) AS x ON p."#c0" = x."#k0") AS y WHERE y."#rn" <= 1),
u0 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."author_id" AS "#k0" FROM "public"."visit" AS t WHERE NOT EXISTS (SELECT 1 FROM n0 AS r WHERE r."#i0" = t."id") AND NOT EXISTS (SELECT 1 FROM n11 AS r WHERE r."#i0" = t."id")),
r0 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' ELSE 'held-back' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u0 AS u ),
u1 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", coalesce((active), false) AS "#pass" FROM "public"."author" AS t WHERE NOT coalesce((active), false)),
r1 AS (SELECT u.*, CASE WHEN NOT u."#pass" THEN 'filtered' ELSE 'other' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u1 AS u ),
u2 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."author_id" AS "#k0" FROM "public"."post" AS t WHERE NOT EXISTS (SELECT 1 FROM n2 AS r WHERE r."#i0" = t."id")),
r2 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u2 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u2) AS v WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u2) AS v WHERE EXISTS (SELECT 1 FROM "public"."author" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u3 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."id" AS "#k0" FROM "public"."category" AS t WHERE NOT EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c0" = t."id")),
r3 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u3 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u3) AS v WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u3) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS p WHERE p."category_id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u4 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."post_id" AS "#k0" FROM "public"."comment" AS t WHERE NOT EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = t."post_id")),
r4 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u4 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u4) AS v WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u4) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u5 AS (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t.tableoid AS "#oid", pg_catalog.json_build_array(pg_catalog.left(t."post_id"::pg_catalog.text, 61), pg_catalog.left(t."label"::pg_catalog.text, 61))::pg_catalog.text AS "#s", t."post_id" AS "#k0" FROM "public"."tag" AS t WHERE NOT EXISTS (SELECT 1 FROM n5 AS r WHERE r."#i0" = t.tableoid AND r."#i1" = t.ctid)),
r5 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u5 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u5) AS v WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u5) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u6 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."post_id" AS "#k0" FROM "public"."vote" AS t WHERE NOT EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = t."post_id")),
r6 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u6 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u6) AS v WHERE EXISTS (SELECT 1 FROM n2 AS p WHERE p."#c1" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u6) AS v WHERE EXISTS (SELECT 1 FROM "public"."post" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u7 AS (SELECT t.tableoid AS "#i0", t."id" AS "#i1", t.tableoid AS "#oid", t."author_id" AS "#k0" FROM "public"."note" AS t WHERE NOT EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = t."author_id" AND t.tableoid = '"public"."note"'::pg_catalog.regclass)),
r7 AS (SELECT u.*, CASE WHEN u."#oid" <> '"public"."note"'::pg_catalog.regclass THEN 'inheritance-child' WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN u."#oid" <> '"public"."note"'::pg_catalog.regclass THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u7 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u7) AS v WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u7) AS v WHERE EXISTS (SELECT 1 FROM "public"."author" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u8 AS (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t.tableoid AS "#oid", pg_catalog.json_build_array(pg_catalog.left(t."id"::pg_catalog.text, 61), pg_catalog.left(t."author_id"::pg_catalog.text, 61))::pg_catalog.text AS "#s", t."author_id" AS "#k0" FROM "public"."event" AS t WHERE NOT EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = t."author_id")),
r8 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u8 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u8) AS v WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u8) AS v WHERE EXISTS (SELECT 1 FROM "public"."author" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0"),
u9 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."id" AS "#n0" FROM "public"."book" AS t WHERE NOT EXISTS (SELECT 1 FROM n9 AS r WHERE r."#i0" = t."id")),
r9 AS (SELECT u.*, CASE WHEN NOT lk."#n0" IS NOT NULL THEN 'not-linked' WHEN rk."#n0" IS NOT NULL THEN 'filtered' WHEN ak."#n0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u9 AS u LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u9) AS v WHERE EXISTS (SELECT 1 FROM "public"."book_author" AS j WHERE j."book_id" = v."#n0")) AS lk ON lk."#n0" = u."#n0" LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u9) AS v WHERE EXISTS (SELECT 1 FROM "public"."book_author" AS j JOIN n1 AS p ON p."#c0" = j."author_id" WHERE j."book_id" = v."#n0")) AS rk ON rk."#n0" = u."#n0" LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u9) AS v WHERE EXISTS (SELECT 1 FROM "public"."book_author" AS j JOIN "public"."author" AS p ON p."id" = j."author_id" WHERE j."book_id" = v."#n0")) AS ak ON ak."#n0" = u."#n0"),
u10 AS (SELECT t.tableoid AS "#i0", t.ctid AS "#i1", t.tableoid AS "#oid", pg_catalog.json_build_array(pg_catalog.left(t."author_id"::pg_catalog.text, 61), pg_catalog.left(t."book_id"::pg_catalog.text, 61), pg_catalog.left(t."role"::pg_catalog.text, 61))::pg_catalog.text AS "#s", t."author_id" AS "#k0", t."book_id" AS "#n0" FROM "public"."book_author" AS t WHERE NOT EXISTS (SELECT 1 FROM n9 AS r WHERE r."#j0" = t.tableoid AND r."#j1" = t.ctid)),
r10 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL AND NOT rl."#n0" IS NOT NULL THEN 'no-related-row' WHEN rk."#k0" IS NOT NULL THEN 'filtered' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u10 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u10) AS v WHERE EXISTS (SELECT 1 FROM n1 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u10) AS v WHERE EXISTS (SELECT 1 FROM "public"."author" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0" LEFT JOIN (SELECT v."#n0" FROM (SELECT DISTINCT "#n0" FROM u10) AS v WHERE EXISTS (SELECT 1 FROM "public"."book" AS t WHERE t."id" = v."#n0")) AS rl ON rl."#n0" = u."#n0"),
u11 AS (SELECT t."id" AS "#i0", t.tableoid AS "#oid", t."book_id" AS "#k0" FROM "public"."chapter" AS t WHERE NOT EXISTS (SELECT 1 FROM n10 AS r WHERE r."#i0" = t."id")),
r11 AS (SELECT u.*, CASE WHEN u."#k0" IS NULL THEN 'null-key' WHEN rk."#k0" IS NOT NULL THEN 'beyond-limit' WHEN ak."#k0" IS NOT NULL THEN 'parent-unreached' ELSE 'no-parent' END AS reason, CASE WHEN false THEN u."#oid"::pg_catalog.regclass::pg_catalog.text END AS child FROM u11 AS u LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u11) AS v WHERE EXISTS (SELECT 1 FROM n9 AS p WHERE p."#c0" = v."#k0")) AS rk ON rk."#k0" = u."#k0" LEFT JOIN (SELECT v."#k0" FROM (SELECT DISTINCT "#k0" FROM u11) AS v WHERE EXISTS (SELECT 1 FROM "public"."book" AS p WHERE p."id" = v."#k0")) AS ak ON ak."#k0" = u."#k0")
SELECT 0::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."visit"
UNION ALL
SELECT 0::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r0 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r0 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 1::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."author"
UNION ALL
SELECT 1::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r1 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r1 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 2::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."post"
UNION ALL
SELECT 2::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r2 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r2 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 3::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."category"
UNION ALL
SELECT 3::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r3 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r3 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 4::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."comment"
UNION ALL
SELECT 4::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r4 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r4 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 5::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."tag"
UNION ALL
SELECT 5::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r5 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(x."#s" ORDER BY x."#s" COLLATE "C") AS samples FROM (SELECT r.* FROM r5 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#s" COLLATE "C" LIMIT 5) AS x) AS s
UNION ALL
SELECT 6::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."vote"
UNION ALL
SELECT 6::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r6 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r6 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 7::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."note"
UNION ALL
SELECT 7::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r7 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i1"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0", x."#i1") AS samples FROM (SELECT r.* FROM r7 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0", r."#i1" LIMIT 5) AS x) AS s
UNION ALL
SELECT 8::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."event"
UNION ALL
SELECT 8::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r8 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(x."#s" ORDER BY x."#s" COLLATE "C") AS samples FROM (SELECT r.* FROM r8 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#s" COLLATE "C" LIMIT 5) AS x) AS s
UNION ALL
SELECT 9::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."book"
UNION ALL
SELECT 9::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r9 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r9 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
UNION ALL
SELECT 10::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."book_author"
UNION ALL
SELECT 10::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r10 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(x."#s" ORDER BY x."#s" COLLATE "C") AS samples FROM (SELECT r.* FROM r10 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#s" COLLATE "C" LIMIT 5) AS x) AS s
UNION ALL
SELECT 11::int4, 'total'::text, NULL::text, count(*)::int8, NULL::text[] FROM "public"."chapter"
UNION ALL
SELECT 11::int4, g.reason, g.child, g.n, s.samples
FROM (SELECT r.reason, r.child, count(*)::int8 AS n FROM r11 AS r GROUP BY 1, 2) AS g
CROSS JOIN LATERAL (SELECT pg_catalog.array_agg(pg_catalog.json_build_array(pg_catalog.left(x."#i0"::pg_catalog.text, 61))::pg_catalog.text ORDER BY x."#i0") AS samples FROM (SELECT r.* FROM r11 AS r WHERE r.reason = g.reason AND r.child IS NOT DISTINCT FROM g.child ORDER BY r."#i0" LIMIT 5) AS x) AS s
ORDER BY 1, 2, 3
