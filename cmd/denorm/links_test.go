package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestCompositeLinks: a link over a composite foreign key gives each
// student the _ids of its courses (documents, in the courses' _id order
// and names) and each course its student ids; both arrays reference the
// other collection, so verify checks them: none dangles, until the
// courses' filter drops a course students still hold.
func TestCompositeLinks(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE student (id int PRIMARY KEY, name text);
CREATE TABLE course (dept text, num int, title text, PRIMARY KEY (dept, num));
CREATE TABLE enrollment (course_num int, course_dept text, student_id int REFERENCES student,
  PRIMARY KEY (course_num, course_dept, student_id),
  FOREIGN KEY (course_dept, course_num) REFERENCES course (dept, num));
INSERT INTO student VALUES (1, 'ann'), (2, 'bob');
INSERT INTO course VALUES ('cs', 101, 'intro'), ('cs', 202, 'algo'), ('ma', 101, 'calc');
INSERT INTO enrollment VALUES (101, 'cs', 1), (202, 'cs', 1), (101, 'ma', 1), (202, 'cs', 2);`)
	mapping := func(filter string) string {
		m := `version: 1
collections:
  - name: students
    table: student
  - name: courses
    table: course
    id: [dept, num]
    rename: {num: number}
` + filter + `links:
  - table: enrollment
    sides:
      - {collection: students}
      - {collection: courses, field: enrolled}
`
		file := filepath.Join(t.TempDir(), "links.yaml")
		if err := os.WriteFile(file, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	all, filtered := mapping(""), mapping("    filter: \"dept <> 'ma'\"\n")
	if code, out, errs := runCLI(t, "validate", "--mapping", all, "--source", src); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	dir := filepath.Join(t.TempDir(), "out")
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", all, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	students := strings.Join(testenv.ReadLines(t, filepath.Join(dir, "students.jsonl")), "\n")
	courses := strings.Join(testenv.ReadLines(t, filepath.Join(dir, "courses.jsonl")), "\n")
	for _, want := range []string{
		`{"_id":1,"name":"ann","courses":[{"dept":"cs","number":101},{"dept":"cs","number":202},{"dept":"ma","number":101}]}`,
		`{"_id":2,"name":"bob","courses":[{"dept":"cs","number":202}]}`,
	} {
		if !strings.Contains(students, want) {
			t.Errorf("students lack %s:\n%s", want, students)
		}
	}
	for _, want := range []string{
		`{"_id":{"dept":"cs","number":101},"title":"intro","enrolled":[1]}`,
		`{"_id":{"dept":"cs","number":202},"title":"algo","enrolled":[1,2]}`,
	} {
		if !strings.Contains(courses, want) {
			t.Errorf("courses lack %s:\n%s", want, courses)
		}
	}
	report := filepath.Join(t.TempDir(), "verify.json")
	if code, out, errs := runCLI(t, "verify", "--mapping", all, "--source", src, "--target", dir, "--report", report); code != 0 {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	// The filtered mapping leaves out course ma 101, which ann still holds.
	dir2 := filepath.Join(t.TempDir(), "out2")
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", filtered, "--source", src, "--target", dir2); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCLI(t, "verify", "--mapping", filtered, "--source", src, "--target", dir2, "--report", report)
	if code != 0 {
		t.Fatalf("verify: exit %d (dangling references alone are not differences)\n%s%s", code, out, errs)
	}
	rep := readReport(t, report)
	if len(rep.Dangling) != 1 || rep.Dangling[0].Collection != "students" || rep.Dangling[0].RefCollection != "courses" ||
		string(rep.Dangling[0].Ref) != `{"dept":"ma","number":101}` || string(rep.Dangling[0].ID) != "1" {
		t.Errorf("dangling references: %+v", rep.Dangling)
	}
}
