# ConvLab's version, one place for the root project and the engine configured on its own.
set(CONVLAB_VERSION_NUMBER 0.1.0)
