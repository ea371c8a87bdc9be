int h1(int pk, int pacc) {
    int pk_1 = pk; int pacc_1 = pacc; int result = 0; bool running = true;
    while (running) {
        running = false;
        if (pk_1 <= 0) { result = pacc_1; }
        else { int pk_2 = (int)((uint)pk_1 - 1u); int pacc_2 = -1; pk_1 = pk_2; pacc_1 = pacc_2; running = true; }
    }
    return result;
}
__kernel void k(__global int* in, __global int* out) {
    int i = (int)get_global_id(0);
    int x6 = h1(in[i] & 15, 0);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    out[i] = x6;
}
__kernel void ref(__global int* in, __global int* out) {
    int i = (int)get_global_id(0);
    out[i] = (in[i] & 15) <= 0 ? 0 : -1;
}
