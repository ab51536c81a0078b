"""The models the stages load: where their files are on disk (nothing is downloaded at run time) and how they run."""
